//! A table written as an Apache Parquet file, as pandas (`read_parquet`),
//! polars and DuckDB read it: one row group, one uncompressed data page a
//! column, values PLAIN-encoded, every column optional (its definition
//! levels RLE-encoded), the footer in Thrift's compact protocol. What an
//! export of a store needs, and no more: no nesting, no dictionary, no
//! compression, no statistics (readers compute what they need).

/// One column's values, a row each (`None`: null).
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    /// UTF-8 text (`BYTE_ARRAY`, annotated `STRING`).
    Text(Vec<Option<String>>),
    /// A signed 64-bit integer (`INT64`).
    Int(Vec<Option<i64>>),
    /// A 64-bit float (`DOUBLE`).
    Float(Vec<Option<f64>>),
    /// A boolean (`BOOLEAN`).
    Bool(Vec<Option<bool>>),
}

impl Column {
    fn len(&self) -> usize {
        match self {
            Column::Text(v) => v.len(),
            Column::Int(v) => v.len(),
            Column::Float(v) => v.len(),
            Column::Bool(v) => v.len(),
        }
    }

    /// Parquet's physical type.
    fn physical_type(&self) -> i32 {
        match self {
            Column::Bool(_) => 0,
            Column::Int(_) => 2,
            Column::Float(_) => 5,
            Column::Text(_) => 6,
        }
    }

    /// Whether each row holds a value.
    fn present(&self) -> Vec<bool> {
        match self {
            Column::Text(v) => v.iter().map(Option::is_some).collect(),
            Column::Int(v) => v.iter().map(Option::is_some).collect(),
            Column::Float(v) => v.iter().map(Option::is_some).collect(),
            Column::Bool(v) => v.iter().map(Option::is_some).collect(),
        }
    }

    /// The values that are there, PLAIN-encoded.
    fn plain(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Column::Text(values) => {
                for value in values.iter().flatten() {
                    let bytes = value.as_bytes();
                    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                    out.extend_from_slice(bytes);
                }
            }
            Column::Int(values) => {
                for value in values.iter().flatten() {
                    out.extend_from_slice(&value.to_le_bytes());
                }
            }
            Column::Float(values) => {
                for value in values.iter().flatten() {
                    out.extend_from_slice(&value.to_le_bytes());
                }
            }
            Column::Bool(values) => {
                // Bit-packed, the first value in the lowest bit.
                let bits: Vec<bool> = values.iter().flatten().copied().collect();
                for chunk in bits.chunks(8) {
                    let byte = chunk
                        .iter()
                        .enumerate()
                        .fold(0u8, |byte, (i, &bit)| byte | (u8::from(bit) << i));
                    out.push(byte);
                }
            }
        }
        out
    }
}

/// The definition levels of an optional column (0 null, 1 there), in the
/// RLE/bit-packed hybrid encoding with a bit width of 1, as runs, behind
/// their length (as a data page of version 1 holds them).
fn definition_levels(present: &[bool]) -> Vec<u8> {
    let mut runs = Vec::new();
    let mut at = 0;
    while at < present.len() {
        let value = present[at];
        let length = present[at..].iter().take_while(|&&p| p == value).count();
        varint(&mut runs, (length as u64) << 1);
        runs.push(u8::from(value));
        at += length;
    }
    let mut out = (runs.len() as u32).to_le_bytes().to_vec();
    out.extend(runs);
    out
}

fn varint(out: &mut Vec<u8>, mut value: u64) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

/// Thrift's compact protocol, the parts the footer and page headers use.
struct Compact {
    out: Vec<u8>,
    /// The last field id written, per struct open.
    last: Vec<i16>,
}

const I32: u8 = 5;
const I64: u8 = 6;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const STRUCT: u8 = 12;

impl Compact {
    fn new() -> Compact {
        Compact {
            out: Vec::new(),
            last: vec![0],
        }
    }

    fn field(&mut self, id: i16, kind: u8) {
        let last = self.last.last_mut().expect("a struct is open");
        let delta = id - *last;
        if (1..=15).contains(&delta) {
            self.out.push(((delta as u8) << 4) | kind);
        } else {
            self.out.push(kind);
            varint(&mut self.out, zigzag(i64::from(id)));
        }
        *last = id;
    }

    fn i32(&mut self, id: i16, value: i32) {
        self.field(id, I32);
        varint(&mut self.out, zigzag(i64::from(value)));
    }

    fn i64(&mut self, id: i16, value: i64) {
        self.field(id, I64);
        varint(&mut self.out, zigzag(value));
    }

    fn binary(&mut self, id: i16, bytes: &[u8]) {
        self.field(id, BINARY);
        self.raw_binary(bytes);
    }

    fn raw_binary(&mut self, bytes: &[u8]) {
        varint(&mut self.out, bytes.len() as u64);
        self.out.extend_from_slice(bytes);
    }

    fn list(&mut self, id: i16, kind: u8, size: usize) {
        self.field(id, LIST);
        if size < 15 {
            self.out.push(((size as u8) << 4) | kind);
        } else {
            self.out.push(0xf0 | kind);
            varint(&mut self.out, size as u64);
        }
    }

    fn list_i32(&mut self, id: i16, values: &[i32]) {
        self.list(id, I32, values.len());
        for &value in values {
            varint(&mut self.out, zigzag(i64::from(value)));
        }
    }

    fn list_binary(&mut self, id: i16, values: &[&[u8]]) {
        self.list(id, BINARY, values.len());
        for value in values {
            self.raw_binary(value);
        }
    }

    /// A struct field: its fields follow, then [`Compact::end`].
    fn begin(&mut self, id: i16) {
        self.field(id, STRUCT);
        self.last.push(0);
    }

    /// A struct as an element of a list: its fields follow, then
    /// [`Compact::end`].
    fn begin_element(&mut self) {
        self.last.push(0);
    }

    fn end(&mut self) {
        self.out.push(0);
        self.last.pop();
    }
}

/// `columns` as a Parquet file: `(name, values)`, each of the same
/// number of rows.
///
/// # Panics
///
/// When the columns hold different numbers of rows.
pub fn write(columns: &[(&str, Column)]) -> Vec<u8> {
    let rows = columns.first().map_or(0, |(_, c)| c.len());
    assert!(
        columns.iter().all(|(_, c)| c.len() == rows),
        "every column holds {rows} rows"
    );
    let mut file = b"PAR1".to_vec();
    // Per column: where its chunk starts and how long it is.
    let mut chunks: Vec<(i64, i64)> = Vec::new();
    for (_, column) in columns {
        let mut page = definition_levels(&column.present());
        page.extend(column.plain());
        let mut header = Compact::new();
        header.i32(1, 0); // DATA_PAGE
        header.i32(2, page.len() as i32);
        header.i32(3, page.len() as i32);
        header.begin(5);
        header.i32(1, rows as i32);
        header.i32(2, 0); // PLAIN
        header.i32(3, 3); // RLE
        header.i32(4, 3); // RLE
        header.end();
        header.out.push(0);
        let offset = file.len() as i64;
        file.extend(&header.out);
        file.extend(&page);
        chunks.push((offset, (header.out.len() + page.len()) as i64));
    }
    let mut footer = Compact::new();
    footer.i32(1, 1); // version
    footer.list(2, STRUCT, columns.len() + 1);
    footer.begin_element();
    footer.binary(4, b"schema");
    footer.i32(5, columns.len() as i32);
    footer.end();
    for (name, column) in columns {
        footer.begin_element();
        footer.i32(1, column.physical_type());
        footer.i32(3, 1); // OPTIONAL
        footer.binary(4, name.as_bytes());
        if matches!(column, Column::Text(_)) {
            footer.i32(6, 0); // UTF8
            footer.begin(10); // LogicalType
            footer.begin(1); // STRING
            footer.end();
            footer.end();
        }
        footer.end();
    }
    footer.i64(3, rows as i64);
    footer.list(4, STRUCT, 1);
    footer.begin_element();
    footer.list(1, STRUCT, columns.len());
    for ((name, column), &(offset, size)) in columns.iter().zip(&chunks) {
        footer.begin_element();
        footer.i64(2, offset);
        footer.begin(3);
        footer.i32(1, column.physical_type());
        footer.list_i32(2, &[0, 3]); // PLAIN, RLE
        footer.list_binary(3, &[name.as_bytes()]);
        footer.i32(4, 0); // UNCOMPRESSED
        footer.i64(5, rows as i64);
        footer.i64(6, size);
        footer.i64(7, size);
        footer.i64(9, offset);
        footer.end();
        footer.end();
    }
    footer.i64(2, chunks.iter().map(|(_, size)| size).sum());
    footer.i64(3, rows as i64);
    footer.end();
    footer.binary(6, b"profile-cli");
    footer.out.push(0);
    file.extend(&footer.out);
    file.extend_from_slice(&(footer.out.len() as u32).to_le_bytes());
    file.extend_from_slice(b"PAR1");
    file
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_zigzag_varints() {
        let mut out = Vec::new();
        for value in [0, -1, 1, -2, 63, -64, 64, 300] {
            varint(&mut out, zigzag(value));
        }
        assert_eq!(out, [0, 1, 2, 3, 126, 127, 128, 1, 216, 4]);
    }

    #[test]
    fn definition_levels_are_runs_behind_their_length() {
        assert_eq!(
            definition_levels(&[true, true, true, false, true]),
            [6, 0, 0, 0, 6, 1, 2, 0, 2, 1]
        );
        assert_eq!(definition_levels(&[]), [0, 0, 0, 0]);
    }

    #[test]
    fn booleans_pack_eight_to_a_byte_first_value_lowest() {
        let column = Column::Bool(vec![
            Some(true),
            None,
            Some(false),
            Some(true),
            Some(true),
            Some(false),
            Some(false),
            Some(false),
            Some(false),
            Some(true),
        ]);
        assert_eq!(column.plain(), [0b0000_1101, 0b0000_0001]);
    }

    #[test]
    fn a_file_starts_and_ends_with_its_magic_and_says_where_its_footer_is() {
        let file = write(&[
            ("name", Column::Text(vec![Some("a".into()), None])),
            ("ns", Column::Int(vec![Some(5), Some(-7)])),
        ]);
        assert_eq!(&file[..4], b"PAR1");
        assert_eq!(&file[file.len() - 4..], b"PAR1");
        let footer = u32::from_le_bytes(file[file.len() - 8..file.len() - 4].try_into().unwrap());
        let footer_start = file.len() - 8 - footer as usize;
        // The footer's first field: version 1 (field 1, i32, zigzag 2).
        assert_eq!(&file[footer_start..footer_start + 2], [0x15, 2]);
        // The second column's chunk: its page's values, -7 last.
        let values = (-7i64).to_le_bytes();
        assert!(file[..footer_start].ends_with(&values));
    }
}
