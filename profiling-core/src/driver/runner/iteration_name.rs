//! The name of each measured pass's NVTX range, `iteration <i>`, written
//! in place so that naming a pass allocates nothing.

use std::ffi::{c_char, CStr};

/// `iteration <i>` as a C string, formatted on the stack.
pub(super) struct IterationName {
    pub(super) buffer: [u8; 32],
    /// The length of the words before the number.
    pub(super) start: usize,
    /// The number the buffer holds, and how many digits it has.
    pub(super) current: Option<u32>,
    pub(super) digits: usize,
}

impl IterationName {
    pub(super) fn new() -> Self {
        IterationName::after(b"iteration ")
    }

    /// `<prefix><index>`: a paired run's `base iteration 3`.
    pub(super) fn after(prefix: &[u8]) -> Self {
        let mut buffer = [0u8; 32];
        // Room for the prefix, ten digits and the NUL.
        assert!(
            prefix.len() + 11 <= buffer.len(),
            "pass name prefix too long"
        );
        buffer[..prefix.len()].copy_from_slice(prefix);
        IterationName {
            buffer,
            start: prefix.len(),
            current: None,
            digits: 0,
        }
    }

    /// `iteration <index>` (after the prefix) as a C string. The passes count up one at a
    /// time: the next number is the last one's digits carried in place.
    #[inline]
    pub(super) fn format(&mut self, index: u32) -> &CStr {
        let start = self.start;
        if self
            .current
            .is_some_and(|last| last.checked_add(1) == Some(index))
        {
            self.increment(start);
        } else {
            self.write(start, index);
        }
        self.current = Some(index);
        // SAFETY: the buffer holds the prefix, ASCII digits and a NUL at
        // `start + digits`, with no NUL before it.
        unsafe { CStr::from_ptr(self.buffer.as_ptr().cast::<c_char>()) }
    }

    #[inline(always)]
    fn increment(&mut self, start: usize) {
        let last = start + self.digits - 1;
        if self.buffer[last] != b'9' {
            self.buffer[last] += 1;
        } else {
            self.carry(start);
        }
    }

    #[cold]
    fn carry(&mut self, start: usize) {
        let digits = &mut self.buffer[start..start + self.digits];
        for digit in digits.iter_mut().rev() {
            if *digit == b'9' {
                *digit = b'0';
            } else {
                *digit += 1;
                return;
            }
        }
        // Every digit carried: one more, a leading 1 and zeros after it.
        digits[0] = b'1';
        self.buffer[start + self.digits] = b'0';
        self.digits += 1;
        self.buffer[start + self.digits] = 0;
    }

    fn write(&mut self, start: usize, index: u32) {
        let mut digits = [0u8; 10];
        let mut n = index;
        let mut len = 0;
        loop {
            digits[len] = b'0' + (n % 10) as u8;
            len += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        for (offset, digit) in digits[..len].iter().rev().enumerate() {
            self.buffer[start + offset] = *digit;
        }
        self.buffer[start + len] = 0;
        self.digits = len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iteration_names_count_from_zero() {
        let mut name = IterationName::new();
        assert_eq!(name.format(0).to_str().unwrap(), "iteration 0");
        assert_eq!(name.format(42).to_str().unwrap(), "iteration 42");
        assert_eq!(name.format(7).to_str().unwrap(), "iteration 7");
        assert_eq!(
            name.format(u32::MAX).to_str().unwrap(),
            "iteration 4294967295"
        );
    }

    /// Counting up carries digits in place: every name from 0 to 12,345
    /// reads as its number, across each new digit.
    #[test]
    fn iteration_names_counted_up_carry_their_digits() {
        let mut name = IterationName::new();
        for index in 0..=12_345u32 {
            assert_eq!(
                name.format(index).to_str().unwrap(),
                format!("iteration {index}")
            );
        }
        assert_eq!(
            name.format(4_294_967_294).to_str().unwrap(),
            "iteration 4294967294"
        );
        assert_eq!(
            name.format(u32::MAX).to_str().unwrap(),
            "iteration 4294967295"
        );
        assert_eq!(name.format(0).to_str().unwrap(), "iteration 0");
        assert_eq!(name.format(1).to_str().unwrap(), "iteration 1");
    }
}
