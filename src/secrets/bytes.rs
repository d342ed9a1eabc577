//! Byte encodings the secrets stage and the render memo share: lowercase hex, and
//! length-prefixed fields for what is hashed or MACed (so `ab`,`c` and `a`,`bc` differ).

/// Appends `field` to `buffer` with its length first (8 bytes, big-endian).
pub(crate) fn push_lp(buffer: &mut Vec<u8>, field: &[u8]) {
    buffer.extend_from_slice(&(field.len() as u64).to_be_bytes());
    buffer.extend_from_slice(field);
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
