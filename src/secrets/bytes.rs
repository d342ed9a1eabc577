//! Byte encodings the secrets stage and the render memo share: lowercase hex, and
//! length-prefixed fields for what is hashed or MACed (so `ab`,`c` and `a`,`bc` differ).

/// Appends `field` to `buffer` with its length first (8 bytes, big-endian).
pub(crate) fn push_lp(buffer: &mut Vec<u8>, field: &[u8]) {
    buffer.extend_from_slice(&(field.len() as u64).to_be_bytes());
    buffer.extend_from_slice(field);
}

/// `field` with its length first, as [`push_lp`] writes it.
#[must_use]
pub(crate) fn lp(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len() + 8);
    push_lp(&mut out, field);
    out
}

/// The `N` bytes `hex` (2 x `N` hex digits, either case) stands for; `None` for anything else.
#[must_use]
pub(crate) fn from_hex<const N: usize>(hex: &str) -> Option<[u8; N]> {
    if hex.len() != 2 * N {
        return None;
    }
    let digit = |c: u8| char::from(c).to_digit(16);
    let mut out = [0u8; N];
    for (byte, pair) in out.iter_mut().zip(hex.as_bytes().chunks_exact(2)) {
        *byte = u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).ok()?;
    }
    Some(out)
}

/// Lowercase hex of `bytes`.
#[must_use]
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_reads_back_what_it_writes_and_nothing_else() {
        let bytes = [0u8, 1, 0xab, 0xff];
        assert_eq!(from_hex::<4>(&to_hex(&bytes)), Some(bytes));
        assert_eq!(from_hex::<4>("0001ABFF"), Some(bytes), "either case");
        assert_eq!(from_hex::<4>("0001abf"), None, "too short");
        assert_eq!(from_hex::<2>("+f0f"), None, "a sign is not a digit");
        assert_eq!(from_hex::<2>("0g0f"), None);
        assert_eq!(lp(b"ab"), [0, 0, 0, 0, 0, 0, 0, 2, b'a', b'b']);
    }
}
