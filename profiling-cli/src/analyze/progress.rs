//! nsys's output without the frames of its progress bars, as it streams:
//! nsys redraws a bar over one line with carriage returns, and what it says
//! around the bar is kept, one part per line.
//!
//! The filter looks at each byte once: a part (the text between two
//! carriage returns or newlines) is held only while it could still be a
//! frame, which is short; a longer one is passed on as it comes, so output
//! without a newline costs what it is long, in time and in memory.

use std::io::Write;

/// A part longer than this is no progress frame: it is passed on as it
/// comes instead of held.
const LONGEST_FRAME: usize = 4096;

/// The state between two chunks of nsys's output.
#[derive(Debug, Default)]
pub(crate) struct ProgressFilter {
    /// The part so far, while it may still be a frame.
    part: Vec<u8>,
    /// The part is longer than a frame and is being passed on.
    passing: bool,
    /// Something of the current line was kept (a newline ends it).
    kept_in_line: bool,
    /// The current line had a carriage return.
    carriage_return: bool,
}

impl ProgressFilter {
    /// Filters `bytes`, the next of the output, into `out`.
    pub(crate) fn feed(&mut self, bytes: &[u8], out: &mut dyn Write) -> std::io::Result<()> {
        let mut rest = bytes;
        while !rest.is_empty() {
            match rest.iter().position(|&b| b == b'\r' || b == b'\n') {
                Some(at) => {
                    self.extend(&rest[..at], out)?;
                    self.end_part(rest[at], out)?;
                    rest = &rest[at + 1..];
                }
                None => {
                    self.extend(rest, out)?;
                    rest = &[];
                }
            }
        }
        Ok(())
    }

    /// The end of the output: a last part without a newline is kept as it
    /// is, without one.
    pub(crate) fn finish(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        self.close_part(out)?;
        *self = ProgressFilter::default();
        Ok(())
    }

    /// The end of the output, ending a last line kept without a newline
    /// with one: what is written after it starts a line of its own.
    pub(crate) fn finish_line(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        let passing = self.passing;
        self.close_part(out)?;
        if self.kept_in_line || passing {
            out.write_all(b"\n")?;
        }
        *self = ProgressFilter::default();
        Ok(())
    }

    fn extend(&mut self, bytes: &[u8], out: &mut dyn Write) -> std::io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        if self.passing {
            return out.write_all(bytes);
        }
        self.part.extend_from_slice(bytes);
        if self.part.len() > LONGEST_FRAME {
            if self.kept_in_line {
                out.write_all(b"\n")?;
            }
            out.write_all(&self.part)?;
            self.part.clear();
            self.passing = true;
            self.kept_in_line = true;
        }
        Ok(())
    }

    /// Ends the part in progress: kept (after a newline when the line
    /// already kept one) unless it is blank or a frame.
    fn close_part(&mut self, out: &mut dyn Write) -> std::io::Result<bool> {
        if self.passing {
            self.passing = false;
            return Ok(false);
        }
        let text = String::from_utf8_lossy(&self.part);
        let blank = text.trim().is_empty();
        if !blank && !is_progress_frame(&text) {
            if self.kept_in_line {
                out.write_all(b"\n")?;
            }
            out.write_all(&self.part)?;
            self.kept_in_line = true;
        }
        self.part.clear();
        Ok(blank)
    }

    fn end_part(&mut self, end: u8, out: &mut dyn Write) -> std::io::Result<()> {
        let blank = self.close_part(out)?;
        if end == b'\r' {
            self.carriage_return = true;
            return Ok(());
        }
        // A line that was only progress goes with it; an empty line stays.
        if self.kept_in_line || (blank && !self.carriage_return) {
            out.write_all(b"\n")?;
        }
        self.kept_in_line = false;
        self.carriage_return = false;
        Ok(())
    }
}

/// Whether `segment` (text between carriage returns) is a frame of one of
/// nsys's progress bars: a bracket of `=`, spaces and a percentage, as in
/// `[1/1] [=====78%      ] trace.nsys-rep` or
/// `Exporting 1956 events: [==12%    ]`.
fn is_progress_frame(segment: &str) -> bool {
    segment.match_indices('[').any(|(at, _)| {
        let inner = &segment[at + 1..];
        let Some(close) = inner.find(']') else {
            return false;
        };
        let bar = &inner[..close];
        bar.contains('%')
            && bar
                .chars()
                .all(|c| c == '=' || c == ' ' || c == '%' || c.is_ascii_digit())
    })
}

/// `text` without the frames of nsys's progress bars: each line keeps
/// what its carriage-return-separated parts say besides them.
pub(crate) fn without_progress(text: &str) -> String {
    let mut kept = Vec::new();
    let mut filter = ProgressFilter::default();
    // Writing into a vector cannot fail.
    let _ = filter.feed(text.as_bytes(), &mut kept);
    let _ = filter.finish(&mut kept);
    String::from_utf8_lossy(&kept).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// nsys draws its progress over one line with carriage returns: the
    /// frames go, what it says around them stays, a line at a time.
    #[test]
    fn progress_bars_are_dropped_and_messages_kept() {
        let profile = "Capture range ended in the application.\n\
            [1/1] [0%                          ] r1.nsys-rep\r[1/1] [=====34%               ] r1.nsys-rep\r[1/1] [========================100%] r1.nsys-rep\n\
            Generated:\n    /r/.r1.nsys/trace.nsys-rep\n";
        assert_eq!(
            without_progress(profile),
            "Capture range ended in the application.\nGenerated:\n    /r/.r1.nsys/trace.nsys-rep\n"
        );
        let export = "Exporting 1956 events: [1%        ]\rExporting 1956 events: [===100%]\n";
        assert_eq!(without_progress(export), "");
        // A run's own line with brackets and a percentage is not a bar.
        let own = "step  [a] 12.5 % of a pass\n\nerror: [E0425] at 3 %\n";
        assert_eq!(without_progress(own), own);
        // Parts of one line beside a frame: each on a line of its own.
        assert_eq!(
            without_progress("said\r[==50%  ]\ralso\rend"),
            "said\nalso\nend"
        );
    }

    /// The same text cut anywhere into chunks filters the same: a frame
    /// split between two reads is still a frame.
    #[test]
    fn chunks_cut_anywhere_filter_as_the_whole() {
        let text = "a\r[1/1] [==34%   ] x\r[1/1] [====100%] x\nGenerated:\n\n  b\rc\n";
        let whole = without_progress(text);
        for cut in 0..text.len() {
            let mut out = Vec::new();
            let mut filter = ProgressFilter::default();
            filter.feed(&text.as_bytes()[..cut], &mut out).unwrap();
            filter.feed(&text.as_bytes()[cut..], &mut out).unwrap();
            filter.finish(&mut out).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), whole, "cut at {cut}");
        }
    }

    /// Output without a newline is passed on as it comes, past the length
    /// of a frame, and whole: nothing waits for a line's end.
    #[test]
    fn a_long_part_is_passed_on_before_its_line_ends() {
        let mut out = Vec::new();
        let mut filter = ProgressFilter::default();
        let chunk = vec![b'x'; 1000];
        for _ in 0..10 {
            filter.feed(&chunk, &mut out).unwrap();
        }
        assert!(out.len() > 5 * 1000, "{} bytes passed on", out.len());
        filter.feed(b"\rnext\n", &mut out).unwrap();
        filter.finish(&mut out).unwrap();
        let mut expected = vec![b'x'; 10_000];
        expected.extend_from_slice(b"\nnext\n");
        assert_eq!(out, expected);
    }
}
