//! Lines of generated code laid out as rustfmt lays them out, so a new
//! snippet is formatted as it will stay.

/// Widest line rustfmt keeps.
const WIDTH: usize = 100;

/// `head(args)tail` on one line when it fits, else one argument per line.
pub(super) fn call_layout(indent: usize, head: &str, args: &[String], tail: &str) -> String {
    let pad = " ".repeat(indent);
    let one_line = format!("{pad}{head}({}){tail}", args.join(", "));
    if one_line.len() <= WIDTH || args.is_empty() {
        return one_line;
    }
    vertical(&pad, head, args, tail)
}

fn vertical(pad: &str, head: &str, args: &[String], tail: &str) -> String {
    let mut text = format!("{pad}{head}(\n");
    for arg in args {
        text.push_str(&format!("{pad}    {arg},\n"));
    }
    text.push_str(&format!("{pad}){tail}"));
    text
}

/// Widest argument list rustfmt keeps on one line (`fn_call_width`).
const CALL_WIDTH: usize = 60;

/// A statement around the call `head(args)close`, laid out as rustfmt
/// does: `prefix` before it (`let output = `, or `Ok(` when `nested`, a
/// call whose only argument is this call), `end` after it.
pub(super) fn call_statement(
    indent: usize,
    prefix: &str,
    head: &str,
    args: &[String],
    close: &str,
    end: &str,
    nested: bool,
) -> String {
    let pad = " ".repeat(indent);
    let joined = args.join(", ");
    let call = format!("{head}({joined}){close}");
    // Nested in another call, a call of several arguments breaks when it is
    // wider than a call may be on one line.
    let fits =
        joined.len() <= CALL_WIDTH && (!nested || args.len() < 2 || call.len() <= CALL_WIDTH);
    let one_line = format!("{pad}{prefix}{call}{end}");
    if fits && one_line.len() <= WIDTH {
        return one_line;
    }
    if fits && prefix.starts_with("let ") {
        let next_line = format!("{pad}    {call}{end}");
        if next_line.len() <= WIDTH {
            return format!("{pad}{}\n{next_line}", prefix.trim_end());
        }
    }
    vertical(
        &pad,
        &format!("{prefix}{head}"),
        args,
        &format!("{close}{end}"),
    )
}

/// `Name { a, b }` as rustfmt writes a struct literal of shorthand fields.
pub(super) fn struct_literal(
    indent: usize,
    head: &str,
    name: &str,
    fields: &[String],
    tail: &str,
) -> String {
    let pad = " ".repeat(indent);
    let inline = fields.join(", ");
    let one_line = format!("{pad}{head}{name} {{ {inline} }}{tail}");
    if fields.is_empty() {
        return format!("{pad}{head}{name} {{}}{tail}");
    }
    if inline.len() <= 18 && one_line.len() <= WIDTH {
        return one_line;
    }
    let mut text = format!("{pad}{head}{name} {{\n");
    for field in fields {
        text.push_str(&format!("{pad}    {field},\n"));
    }
    text.push_str(&format!("{pad}}}{tail}"));
    text
}

/// The let-else that returns an error naming the values still to set.
pub(super) fn missing_values(indent: usize, names: &[(String, String)], what: &str) -> String {
    let pad = " ".repeat(indent);
    let pattern = if names.len() == 1 {
        format!("Some({})", names[0].0)
    } else {
        format!(
            "({})",
            names
                .iter()
                .map(|(n, _)| format!("Some({n})"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let value = if names.len() == 1 {
        names[0].0.clone()
    } else {
        format!(
            "({})",
            names
                .iter()
                .map(|(n, _)| n.clone())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let mut text = format!("{pad}let {pattern} = {value} else {{\n");
    text.push_str(&format!("{pad}    anyhow::bail!(\n"));
    text.push_str(&format!("{pad}        \"{{}}: {what} yet:"));
    for (i, (_, ty)) in names.iter().enumerate() {
        let separator = if i + 1 == names.len() { "" } else { "," };
        text.push_str(&format!(" \\\n{pad}         `{ty}`{separator}"));
    }
    text.push_str("\",\n");
    text.push_str(&format!("{pad}        file!()\n"));
    text.push_str(&format!("{pad}    );\n"));
    text.push_str(&format!("{pad}}};\n"));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_break_one_argument_per_line_past_the_width() {
        let args: Vec<String> = ["inputs.raw.view()", "&inputs.letterbox", "&inputs.params"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            call_layout(8, "Ok(f", &args, ")"),
            "        Ok(f(inputs.raw.view(), &inputs.letterbox, &inputs.params))"
        );
        assert_eq!(
            call_layout(8, "Ok(postprocess_detections_with_a_very_long_name", &args, ")"),
            "        Ok(postprocess_detections_with_a_very_long_name(\n            inputs.raw.view(),\n            &inputs.letterbox,\n            &inputs.params,\n        ))"
        );
    }

    #[test]
    fn statements_around_a_call_are_laid_out_as_rustfmt_lays_them_out() {
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        // Several arguments, nested in `Ok(`: broken past 60 columns.
        assert_eq!(
            call_statement(
                8,
                "Ok(",
                "postprocess_detections",
                &args(&["inputs.raw.view()", "&inputs.letterbox", "&inputs.params"]),
                "",
                ")",
                true
            ),
            "        Ok(postprocess_detections(\n            inputs.raw.view(),\n            &inputs.letterbox,\n            &inputs.params,\n        ))"
        );
        // One argument stays on the line.
        assert_eq!(
            call_statement(
                8,
                "Ok(",
                "<SyntheticDetector as SyntheticDetectorNumAnchors>::num_anchors",
                &args(&["&self.receiver"]),
                "",
                ")",
                true
            ),
            "        Ok(<SyntheticDetector as SyntheticDetectorNumAnchors>::num_anchors(&self.receiver))"
        );
        // After `let`, the call moves to the next line before it breaks.
        assert_eq!(
            call_statement(
                8,
                "let output = ",
                "<DetectionPipeline as DetectionPipelineRun>::run",
                &args(&["&mut self.receiver", "&inputs.image"]),
                "",
                ";",
                false
            ),
            "        let output =\n            <DetectionPipeline as DetectionPipelineRun>::run(&mut self.receiver, &inputs.image);"
        );
    }
}
