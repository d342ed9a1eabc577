//! The compact binary fields of tfrs's own caches (the spec cache's parsed pieces, the render
//! memo's entries): unsigned LEB128 varints, and texts as `varint(length) ‖ UTF-8 bytes`. The
//! reader checks every length against what is left, so damaged or forged bytes are refused
//! (`None`), never misread and never a large allocation.

/// Appends `value` as an unsigned LEB128 varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends `text` with its length first.
pub(crate) fn put_text(out: &mut Vec<u8>, text: &str) {
    put_varint(out, text.len() as u64);
    out.extend_from_slice(text.as_bytes());
}

/// Reads fields from `bytes`, from `at` on.
pub(crate) struct Reader<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) at: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub(crate) fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, at: 0 }
    }

    /// Whether every byte was read.
    pub(crate) fn is_done(&self) -> bool {
        self.at == self.bytes.len()
    }

    pub(crate) fn byte(&mut self) -> Option<u8> {
        let byte = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(byte)
    }

    /// A varint of at most ten bytes.
    pub(crate) fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Some(value);
            }
        }
        None
    }

    /// The next `length` bytes.
    pub(crate) fn take(&mut self, length: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(length)?;
        let taken = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(taken)
    }

    /// A text [`put_text`] wrote.
    pub(crate) fn text(&mut self) -> Option<String> {
        let length = usize::try_from(self.varint()?).ok()?;
        std::str::from_utf8(self.take(length)?).ok().map(str::to_owned)
    }

    /// A count of items, each at least one byte long (so a forged count cannot reserve more
    /// than the input could hold).
    pub(crate) fn count(&mut self) -> Option<usize> {
        let count = usize::try_from(self.varint()?).ok()?;
        (count <= self.bytes.len() - self.at).then_some(count)
    }
}

/// Writes `items` to `out` as blocks of a few thousand, each `u32 (little-endian) length ‖
/// varint(count) ‖ item*` with `put` writing each item; the blocks are made side by side, a
/// window at a time (a large cluster's tens of thousands of items are never all in memory
/// twice).
///
/// # Errors
///
/// `out`'s; a block over 4 GiB.
pub(crate) fn write_blocks<T: Sync>(
    out: &mut dyn std::io::Write,
    items: &[T],
    put: &(dyn Fn(&T, &mut Vec<u8>) + Sync),
) -> std::io::Result<()> {
    use rayon::prelude::*;
    for window in items.chunks(1 << 13) {
        let blocks: Vec<std::io::Result<Vec<u8>>> = window
            .par_chunks(1 << 11)
            .map(|chunk| {
                let mut block = Vec::with_capacity(chunk.len() * 128);
                block.extend_from_slice(&[0; 4]);
                put_varint(&mut block, chunk.len() as u64);
                for item in chunk {
                    put(item, &mut block);
                }
                let length = u32::try_from(block.len() - 4).map_err(std::io::Error::other)?;
                block[..4].copy_from_slice(&length.to_le_bytes());
                Ok(block)
            })
            .collect();
        for block in blocks {
            out.write_all(&block?)?;
        }
    }
    Ok(())
}

/// The items of the blocks [`write_blocks`] wrote (all of `bytes`), each read by `get`, read
/// side by side, in order; `None` when a block is cut short, holds other than its count says,
/// or an item cannot be read.
pub(crate) fn read_blocks<T: Send>(bytes: &[u8], get: &(dyn Fn(&mut Reader<'_>) -> Option<T> + Sync)) -> Option<Vec<T>> {
    use rayon::prelude::*;
    let mut rest = bytes;
    let mut blocks = Vec::new();
    while let Some((length, tail)) = rest.split_first_chunk::<4>() {
        let length = usize::try_from(u32::from_le_bytes(*length)).ok()?;
        (length <= tail.len()).then_some(())?;
        let (block, tail) = tail.split_at(length);
        blocks.push(block);
        rest = tail;
    }
    rest.is_empty().then_some(())?;
    let pieces: Vec<Option<Vec<T>>> = blocks
        .into_par_iter()
        .map(|block| {
            let mut reader = Reader::new(block);
            let count = reader.count()?;
            let mut items = Vec::with_capacity(count);
            for _ in 0..count {
                items.push(get(&mut reader)?);
            }
            reader.is_done().then_some(items)
        })
        .collect();
    let pieces = pieces.into_iter().collect::<Option<Vec<_>>>()?;
    let mut items = Vec::with_capacity(pieces.iter().map(Vec::len).sum());
    for piece in pieces {
        items.extend(piece);
    }
    Some(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_back_and_short_or_forged_bytes_are_refused() {
        let mut out = Vec::new();
        for value in [0, 1, 127, 128, 300, u64::MAX] {
            put_varint(&mut out, value);
        }
        put_text(&mut out, "grüße");
        let mut reader = Reader::new(&out);
        for value in [0, 1, 127, 128, 300, u64::MAX] {
            assert_eq!(reader.varint(), Some(value));
        }
        assert_eq!(reader.text().as_deref(), Some("grüße"));
        assert!(reader.is_done());
        assert_eq!(Reader::new(&[0xff; 11]).varint(), None, "an overlong varint");
        assert_eq!(Reader::new(&[5, b'a']).text(), None, "a text cut short");
        assert_eq!(Reader::new(&[2, 0xc3, 0x28]).text(), None, "not UTF-8");
        assert_eq!(Reader::new(&[0xff, 0xff, 0x03, 0]).count(), None, "more items than bytes");
    }
}
