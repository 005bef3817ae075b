//! The arguments of both attributes, parsed into plain structs.
//!
//! Every check happens here, on the tokens the user wrote, so that an error
//! points at the literal or the key at fault rather than at the attribute.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{Expr, ExprPath, Ident, Lit, LitStr, Path, Token};

use crate::name::{target_name_problem, TARGET_NAME_RULE};

/// `#[nvtx_range(...)]`.
#[derive(Default)]
pub(crate) struct NvtxRangeArgs {
    /// The range name, checked: not empty, no NUL.
    pub name: Option<LitStr>,
    /// A device expression: the range opens only when it is CUDA.
    pub if_cuda: Option<Expr>,
    /// The path of `profiling_core`, for re-exports.
    pub krate: Option<Path>,
}

/// `#[profile_target(...)]`.
#[derive(Default)]
pub(crate) struct ProfileTargetArgs {
    /// The target name, checked against the name rule.
    pub name: Option<LitStr>,
    /// The function that builds the target, instead of `Default::default`.
    pub factory: Option<ExprPath>,
    /// The one-line description, instead of the type's doc comment.
    pub description: Option<LitStr>,
    /// The config the target runs on when none is given: a path from the
    /// crate's directory (the one of its `Cargo.toml`).
    pub config: Option<LitStr>,
    /// What installs the data that config reads: a command, in words.
    pub setup: Option<LitStr>,
    /// The path of `profiling_core`, for re-exports.
    pub krate: Option<Path>,
}

/// `#[data_source(...)]`.
#[derive(Default)]
pub(crate) struct DataSourceArgs {
    /// The source name, checked against the name rule; required.
    pub name: Option<LitStr>,
    /// The one-line description, instead of the type's doc comment.
    pub description: Option<LitStr>,
    /// The path of `profiling_core`, for re-exports.
    pub krate: Option<Path>,
}

impl Parse for DataSourceArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut args = DataSourceArgs::default();
        let grammar = Grammar {
            macro_name: "data_source",
            keys: &["name", "description", "crate"],
            named: "source",
            sample_name: "my-source",
        };
        grammar.parse_each(input, |arg, input| match arg {
            Arg::Bare(_) => grammar.set_name(arg, input, &mut args.name, check_source_name),
            Arg::Keyed(ref key) if key == "name" => {
                grammar.set_name(arg, input, &mut args.name, check_source_name)
            }
            Arg::Keyed(key) if key == "description" => {
                let description = string_value(
                    input.parse()?,
                    "`description` takes a string: `description = \"...\"`",
                )?;
                set_once(
                    &mut args.description,
                    description,
                    key.span(),
                    "`description`",
                )
            }
            // `crate`, the one key left: `parse_each` passes known keys only.
            Arg::Keyed(key) => set_once(
                &mut args.krate,
                parse_crate_path(input)?,
                key.span(),
                "`crate`",
            ),
        })?;
        if args.name.is_none() {
            return Err(syn::Error::new(
                Span::call_site(),
                "name the data source, as configs pick it by `data_source.name`: `#[data_source(name = \"my-source\")]`",
            ));
        }
        Ok(args)
    }
}

impl Parse for NvtxRangeArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut args = NvtxRangeArgs::default();
        let grammar = Grammar {
            macro_name: "nvtx_range",
            keys: &["name", "if_cuda", "crate"],
            named: "range",
            sample_name: "decode",
        };
        grammar.parse_each(input, |arg, input| match arg {
            Arg::Bare(_) => grammar.set_name(arg, input, &mut args.name, check_range_name),
            Arg::Keyed(ref key) if key == "name" => {
                grammar.set_name(arg, input, &mut args.name, check_range_name)
            }
            Arg::Keyed(key) if key == "if_cuda" => {
                set_once(&mut args.if_cuda, input.parse()?, key.span(), "`if_cuda`")
            }
            // `crate`, the one key left: `parse_each` passes known keys only.
            Arg::Keyed(key) => set_once(
                &mut args.krate,
                parse_crate_path(input)?,
                key.span(),
                "`crate`",
            ),
        })?;
        Ok(args)
    }
}

impl Parse for ProfileTargetArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut args = ProfileTargetArgs::default();
        let grammar = Grammar {
            macro_name: "profile_target",
            keys: &["name", "factory", "description", "config", "setup", "crate"],
            named: "target",
            sample_name: "my-target",
        };
        grammar.parse_each(input, |arg, input| match arg {
            Arg::Bare(_) => grammar.set_name(arg, input, &mut args.name, check_target_name),
            Arg::Keyed(ref key) if key == "name" => {
                grammar.set_name(arg, input, &mut args.name, check_target_name)
            }
            Arg::Keyed(key) if key == "factory" => set_once(
                &mut args.factory,
                parse_factory(input)?,
                key.span(),
                "`factory`",
            ),
            Arg::Keyed(key) if key == "description" => {
                let description = string_value(
                    input.parse()?,
                    "`description` takes a string: `description = \"...\"`",
                )?;
                set_once(
                    &mut args.description,
                    description,
                    key.span(),
                    "`description`",
                )
            }
            Arg::Keyed(key) if key == "config" => {
                let config = string_value(
                    input.parse()?,
                    "`config` takes the path of a config file from the crate's directory: `config = \"configs/my-target.yaml\"`",
                )?;
                if config.value().is_empty() || config.value().starts_with('/') {
                    return Err(syn::Error::new(
                        config.span(),
                        "`config` is a path from the crate's directory (the one of its Cargo.toml), not empty nor absolute: `config = \"configs/my-target.yaml\"`",
                    ));
                }
                set_once(&mut args.config, config, key.span(), "`config`")
            }
            Arg::Keyed(key) if key == "setup" => {
                let setup = string_value(
                    input.parse()?,
                    "`setup` takes a string, what installs the data the config reads: `setup = \"scripts/setup-data\"`",
                )?;
                set_once(&mut args.setup, setup, key.span(), "`setup`")
            }
            // `crate`, the one key left: `parse_each` passes known keys only.
            Arg::Keyed(key) => set_once(
                &mut args.krate,
                parse_crate_path(input)?,
                key.span(),
                "`crate`",
            ),
        })?;
        Ok(args)
    }
}

/// One argument as written: a bare literal, or a known key whose `=` has
/// been read and whose value is next in the stream.
enum Arg {
    Bare(Lit),
    Keyed(Ident),
}

/// What the two argument lists share: `"name"` or `key = value`, separated
/// by commas.
struct Grammar {
    macro_name: &'static str,
    keys: &'static [&'static str],
    /// What the name names, for messages: "range" or "target".
    named: &'static str,
    /// A name for the examples in messages.
    sample_name: &'static str,
}

impl Grammar {
    fn parse_each(
        &self,
        input: ParseStream,
        mut each: impl FnMut(Arg, ParseStream) -> syn::Result<()>,
    ) -> syn::Result<()> {
        while !input.is_empty() {
            if input.peek(Lit) {
                each(Arg::Bare(input.parse()?), input)?;
            } else if input.peek(syn::token::Group) {
                // `peek(Lit)` sees through the invisible group `macro_rules!`
                // puts around a `$name:literal`: a group still here holds
                // something else, an expression passed as `$name:expr`.
                return Err(syn::Error::new(
                    input.span(),
                    format!(
                        "expected a string or `key = value` in `#[{}]`; arguments: {}",
                        self.macro_name,
                        self.key_list()
                    ),
                ));
            } else if input.peek(Ident::peek_any) {
                let key = input.call(Ident::parse_any)?;
                let known = self.keys.iter().any(|k| key == k);
                if !known {
                    return Err(self.unknown_key(&key, input.peek(Token![=])));
                }
                if !input.peek(Token![=]) {
                    return Err(syn::Error::new(
                        key.span(),
                        format!("expected `=` after `{key}`: `{key} = ...`"),
                    ));
                }
                input.parse::<Token![=]>()?;
                each(Arg::Keyed(key), input)?;
            } else {
                return Err(input.error(format!(
                    "expected a string or `key = value` in `#[{}]`; arguments: {}",
                    self.macro_name,
                    self.key_list()
                )));
            }
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(())
    }

    fn unknown_key(&self, key: &Ident, has_value: bool) -> syn::Error {
        let mut message = format!(
            "unknown argument `{key}` for `#[{}]`; expected {}",
            self.macro_name,
            self.key_list()
        );
        if !has_value {
            message.push_str(&format!(
                "\nto name the {} `{key}`, write the name as a string: {}",
                self.named,
                self.example(&key.unraw().to_string())
            ));
        }
        syn::Error::new(key.span(), message)
    }

    fn example(&self, name: &str) -> String {
        format!("`#[{}(\"{name}\")]`", self.macro_name)
    }

    fn key_list(&self) -> String {
        let quoted: Vec<String> = self.keys.iter().map(|k| format!("`{k}`")).collect();
        match quoted.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// The name, given bare (`"decode"`) or as `name = "decode"`, checked by
    /// `check` and stored once.
    fn set_name(
        &self,
        arg: Arg,
        input: ParseStream,
        slot: &mut Option<LitStr>,
        check: fn(LitStr) -> syn::Result<LitStr>,
    ) -> syn::Result<()> {
        let (name, span) = match arg {
            Arg::Bare(lit) => {
                let span = lit.span();
                (self.name_literal(lit)?, span)
            }
            Arg::Keyed(key) => (self.name_value(input.parse()?)?, key.span()),
        };
        set_once(
            slot,
            check(name)?,
            span,
            &format!("the {} name", self.named),
        )
    }

    /// A bare literal used as the name: it must be a string.
    fn name_literal(&self, lit: Lit) -> syn::Result<LitStr> {
        match lit {
            Lit::Str(s) if s.suffix().is_empty() => Ok(s),
            other => Err(syn::Error::new(
                other.span(),
                format!(
                    "the {} name must be a string literal: {}",
                    self.named,
                    self.example(self.sample_name)
                ),
            )),
        }
    }

    /// The value of `name = ...`: it must be a string.
    fn name_value(&self, value: Expr) -> syn::Result<LitStr> {
        string_value(
            value,
            &format!(
                "the {} name must be a string literal: {}",
                self.named,
                self.example(self.sample_name)
            ),
        )
    }
}

fn string_value(value: Expr, message: &str) -> syn::Result<LitStr> {
    match unwrap_group(value) {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(s), ..
        }) if s.suffix().is_empty() => Ok(s),
        other => Err(syn::Error::new_spanned(other, message)),
    }
}

/// A `$name:literal` or `$name:expr` passed through `macro_rules!` arrives
/// wrapped in an invisible group; the value is what is inside it.
fn unwrap_group(value: Expr) -> Expr {
    match value {
        Expr::Group(group) => unwrap_group(*group.expr),
        other => other,
    }
}

/// Stores an argument, refusing a second one for the same key; `span` is
/// where the second one is written.
fn set_once<T>(slot: &mut Option<T>, value: T, span: Span, what: &str) -> syn::Result<()> {
    if slot.is_some() {
        return Err(syn::Error::new(
            span,
            format!("{what} is given twice; keep one"),
        ));
    }
    *slot = Some(value);
    Ok(())
}

/// `crate = path` or `crate = "path"`.
fn parse_crate_path(input: ParseStream) -> syn::Result<Path> {
    const USAGE: &str =
        "`crate` takes the path of `profiling_core`, like `crate = my_crate::profiling_core`";
    if input.peek(LitStr) {
        let lit: LitStr = input.parse()?;
        return lit
            .parse_with(Path::parse_mod_style)
            .map_err(|_| syn::Error::new(lit.span(), USAGE));
    }
    input
        .call(Path::parse_mod_style)
        .map_err(|error| syn::Error::new(error.span(), USAGE))
}

/// `factory = path::to::function`.
fn parse_factory(input: ParseStream) -> syn::Result<ExprPath> {
    const USAGE: &str = "`factory` takes the path of a function with no arguments that returns \
                         the target or a `Result` of it, like `factory = make_target`";
    let span = input.span();
    let value: Expr = input.parse().map_err(|_| syn::Error::new(span, USAGE))?;
    match value {
        Expr::Path(path) if path.attrs.is_empty() => Ok(path),
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(s), ..
        }) => Err(syn::Error::new(
            s.span(),
            format!(
                "{USAGE}\nwrite the path without quotes: `factory = {}`",
                s.value()
            ),
        )),
        Expr::Call(call) if call.args.is_empty() => Err(syn::Error::new_spanned(
            &call,
            format!(
                "{USAGE}\nname the function, do not call it: `factory = {}`",
                crate::tokens::compact_tokens(call.func.as_ref())
            ),
        )),
        other => Err(syn::Error::new_spanned(other, USAGE)),
    }
}

fn check_range_name(name: LitStr) -> syn::Result<LitStr> {
    let value = name.value();
    if value.is_empty() {
        return Err(syn::Error::new(
            name.span(),
            "the range name is empty; Nsight shows ranges by name",
        ));
    }
    if value.contains('\0') {
        return Err(syn::Error::new(
            name.span(),
            "the range name contains a NUL character, which would cut it short: NVTX takes C strings",
        ));
    }
    Ok(name)
}

fn check_target_name(name: LitStr) -> syn::Result<LitStr> {
    let value = name.value();
    match target_name_problem(&value) {
        None => Ok(name),
        Some(problem) => Err(syn::Error::new(
            name.span(),
            format!("invalid target name {value:?}: {problem}\n{TARGET_NAME_RULE}"),
        )),
    }
}

fn check_source_name(name: LitStr) -> syn::Result<LitStr> {
    let value = name.value();
    match target_name_problem(&value) {
        None => Ok(name),
        Some(problem) => Err(syn::Error::new(
            name.span(),
            format!(
                "invalid data source name {value:?}: {problem}\n{}",
                TARGET_NAME_RULE.replace("target", "data source")
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::{Delimiter, Group, TokenStream, TokenTree};
    use quote::quote;

    fn target(tokens: TokenStream) -> syn::Result<ProfileTargetArgs> {
        syn::parse2(tokens)
    }

    fn range(tokens: TokenStream) -> syn::Result<NvtxRangeArgs> {
        syn::parse2(tokens)
    }

    #[test]
    fn a_name_with_a_literal_suffix_is_not_a_string() {
        let message = range(quote!("decode"suffix)).err().unwrap().to_string();
        assert_eq!(
            message,
            "the range name must be a string literal: `#[nvtx_range(\"decode\")]`"
        );
        let message = target(quote!(name = "smoke"suffix))
            .err()
            .unwrap()
            .to_string();
        assert_eq!(
            message,
            "the target name must be a string literal: `#[profile_target(\"my-target\")]`"
        );
        let message = target(quote!(description = "text"suffix))
            .err()
            .unwrap()
            .to_string();
        assert_eq!(
            message,
            "`description` takes a string: `description = \"...\"`"
        );
    }

    #[test]
    fn a_name_passed_through_macro_rules_is_read_from_its_group() {
        // `$name:literal` arrives in an invisible group.
        let literal: TokenStream = quote!("from-a-macro");
        let grouped = TokenTree::Group(Group::new(Delimiter::None, literal));
        let args = target(TokenStream::from(grouped)).unwrap();
        assert_eq!(args.name.unwrap().value(), "from-a-macro");
        let other = TokenTree::Group(Group::new(Delimiter::None, quote!(a + b)));
        let message = target(TokenStream::from(other)).err().unwrap().to_string();
        assert!(
            message.starts_with("expected a string or `key = value` in `#[profile_target]`"),
            "{message}"
        );
    }

    #[test]
    fn a_factory_is_a_plain_path() {
        let args = target(quote!(factory = stages::make)).unwrap();
        let path = args.factory.unwrap();
        assert_eq!(quote!(#path).to_string(), "stages :: make");
        let usage = "`factory` takes the path of a function with no arguments that returns the target or a `Result` of it, like `factory = make_target`";
        let with_attribute = target(quote!(
            factory = #[cfg(all())]
            make
        ))
        .err()
        .unwrap();
        assert_eq!(with_attribute.to_string(), usage);
        let called = target(quote!(factory = make())).err().unwrap();
        assert_eq!(
            called.to_string(),
            format!("{usage}\nname the function, do not call it: `factory = make`")
        );
        // Called with arguments, it is not a call of the factory to undo.
        let with_arguments = target(quote!(factory = make(1))).err().unwrap();
        assert_eq!(with_arguments.to_string(), usage);
    }
}
