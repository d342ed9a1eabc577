//! Tests of the current tree: records, listing with them, changes.

use super::*;
use std::fs;

fn files(entries: &[(&str, &str)]) -> Files {
    entries.iter().map(|(p, t)| ((*p).to_owned(), t.as_bytes().to_vec())).collect()
}

fn recorded(changes: &Changes<'_>, written: &BTreeMap<String, Stat>) -> Records {
    let stats: Vec<Stat> = changes.update.changed.iter().map(|p| written[*p]).collect();
    let mut records = changes.records(&stats);
    records.saved = now_nanos() + 2 * RACY;
    records
}

/// Writes `tree` into a new `out` and returns it with the records a render would save.
fn rendered(tree: &Files) -> (tempfile::TempDir, PathBuf, Records) {
    let temp = tempfile::tempdir().unwrap();
    let out = temp.path().join("out");
    let current = Current::read(&out, &Records::default(), &|_| true).unwrap();
    let kept = Kept::new();
    let changes = current.changes(tree, &kept, &|_| true, &|_| false);
    let written = write::write(&out, &changes.update).unwrap();
    // Saved well after the writes: no record is racy.
    let records = recorded(&changes, &written);
    (temp, out, records)
}

#[test]
fn a_file_whose_stat_matches_its_record_is_trusted_unread_and_any_other_is_read() {
    let tree = files(&[("clusters/c/a.yaml", "a: 1\n"), ("clusters/c/b.yaml", "b: 1\n")]);
    let (_temp, out, records) = rendered(&tree);
    assert_eq!(records.files.len(), 2);
    let current = Current::read(&out, &records, &|_| true).unwrap();
    assert_eq!((current.trusted, current.read.len()), (2, 0));
    assert_eq!(current.content_id("clusters/c/a.yaml"), Some(ContentId::of(b"a: 1\n")));
    assert_eq!(current.bytes("clusters/c/b.yaml").as_deref(), Some(&b"b: 1\n"[..]), "read on demand");

    // An edit of the same size: the modification time differs, so the file is read.
    std::thread::sleep(std::time::Duration::from_millis(20));
    fs::write(out.join("clusters/c/a.yaml"), "a: 2\n").unwrap();
    let current = Current::read(&out, &records, &|_| true).unwrap();
    assert_eq!(current.trusted, 1);
    assert_eq!(current.content_id("clusters/c/a.yaml"), Some(ContentId::of(b"a: 2\n")));

    // Records saved right after the write are racy: nothing is trusted.
    let racy = Records { saved: records.files.values().map(|r| r.stat.mtime).max().unwrap() + 1, ..records.clone() };
    assert_eq!(Current::read(&out, &racy, &|_| true).unwrap().trusted, 0);

    // A file listed right after it changed is recorded untrusted, however late the records
    // are saved: a change in the same clock tick, after the listing, would keep its stat.
    let mut again = current.records();
    again.saved = now_nanos() + 2 * RACY;
    assert!(again.files.values().all(|record| record.stat.size == u64::MAX), "written less than 2 s before the listing");
    assert_eq!(Current::read(&out, &again, &|_| true).unwrap().trusted, 0);
    let settled = Current { listed_at: now_nanos() + 2 * RACY, ..current }.records();
    assert_eq!(Current::read(&out, &Records { saved: now_nanos() + 2 * RACY, ..settled }, &|_| true).unwrap().trusted, 2);
}

#[test]
fn what_the_listing_found_just_changed_is_recorded_untrusted() {
    let tree = files(&[("clusters/c/a.yaml", "a\n"), ("clusters/c/n/b.yaml", "b\n")]);
    let (_temp, out, records) = rendered(&tree);
    let untrusted = |records: &Records, yes: bool| {
        let sizes = records.files.values().map(|record| record.stat.size).chain(records.dirs.values().map(|stat| stat.size));
        records.dirs.len() == 2 && sizes.clone().count() == 4 && sizes.into_iter().all(|size| (size == u64::MAX) == yes)
    };
    // Written and listed within the same two seconds: files and directories alike.
    let current = Current::read_below(&out, "clusters/c", &records).unwrap();
    assert!(untrusted(&current.records(), true));
    let kept = Kept::new();
    let changes = current.changes(&tree, &kept, &|_| true, &|_| false);
    assert!(changes.update.changed.is_empty());
    assert!(untrusted(&changes.records(&[]), true));
    // Listed long after: recorded as they are.
    let later = Current { listed_at: now_nanos() + 2 * RACY, ..Current::read_below(&out, "clusters/c", &records).unwrap() };
    assert!(untrusted(&later.records(), false));
    assert!(untrusted(&later.changes(&tree, &kept, &|_| true, &|_| false).records(&[]), false));
}

#[test]
fn records_read_back_what_they_write_and_nothing_from_damaged_bytes() {
    let tree = files(&[("clusters/c/a b.yaml", "a\n"), ("clusters/c/b.yaml", "b\n")]);
    let (_temp, _out, mut records) = rendered(&tree);
    records.dirs.insert("clusters/c".to_owned(), Stat { size: 4096, mtime: 7, ino: 9 });
    let bytes = records.to_bytes();
    assert_eq!(Records::from_bytes(&bytes), records);
    // Cut anywhere, even between two blocks: none.
    for cut in 0..bytes.len() {
        assert_eq!(Records::from_bytes(&bytes[..cut]), Records::default(), "cut at {cut}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(Records::from_bytes(&longer), Records::default(), "trailing bytes");
    // A count that is not what follows: none.
    let mut miscounted = bytes.clone();
    let at = b"tfrs file records v3\n".len() + 8;
    miscounted[at] += 1;
    assert_eq!(Records::from_bytes(&miscounted), Records::default());
    // Any single byte changed in a record's kind or its lengths: refused, or read as other records,
    // never a panic.
    for at in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x80;
        let _ = Records::from_bytes(&damaged);
    }
    assert_eq!(Records::from_bytes(b"tfrs file records v2 1\nend 0 0\n"), Records::default(), "the line-based form");
    assert_eq!(Records::from_bytes(b"{}"), Records::default());
}

#[test]
fn records_are_cut_into_pieces_of_whole_lines() {
    let text = "aé b\nccc ü\n\nd\ne";
    for size in 0..text.len() + 2 {
        let pieces = line_pieces(text, size);
        assert_eq!(pieces.concat(), text, "size {size}");
        assert!(pieces[..pieces.len() - 1].iter().all(|p| p.ends_with('\n')), "size {size}: {pieces:?}");
    }
    assert!(line_pieces("", 4).is_empty());
}

#[test]
fn changes_name_what_is_written_removed_and_kept() {
    let tree =
        files(&[("clusters/c/a.yaml", "a\n"), ("clusters/c/b.yaml", "b\n"), ("clusters/c/gone.yaml", "g\n"), ("clusters/d/x.yaml", "x\n")]);
    let (_temp, out, records) = rendered(&tree);
    // NB: listed as if well after the writes (as the records are saved), so that nothing
    // listed is racy.
    let current = Current { listed_at: now_nanos() + 2 * RACY, ..Current::read(&out, &records, &|_| true).unwrap() };
    let new = files(&[("clusters/c/a.yaml", "a\n"), ("clusters/c/new.yaml", "n\n")]);
    let kept: Kept = [("clusters/c/b.yaml".to_owned(), ContentId::of(b"b\n"))].into_iter().collect();
    let changes = current.changes(&new, &kept, &|_| true, &|path| path.starts_with("clusters/d/"));
    assert_eq!(changes.update.changed, ["clusters/c/new.yaml"]);
    assert_eq!(changes.update.removed, ["clusters/c/gone.yaml"]);
    let mut unchanged = changes.update.unchanged.clone();
    unchanged.sort_unstable();
    assert_eq!(unchanged, ["clusters/c/a.yaml", "clusters/c/b.yaml", "clusters/d/x.yaml"]);
    let written = write::write(&out, &changes.update).unwrap();
    let records = recorded(&changes, &written);
    assert_eq!(
        records.files.keys().collect::<Vec<_>>(),
        ["clusters/c/a.yaml", "clusters/c/b.yaml", "clusters/c/new.yaml", "clusters/d/x.yaml"]
    );
    assert_eq!(Current::read(&out, &records, &|_| true).unwrap().trusted, 4, "the records describe the tree written");
    assert_eq!(
        write::read_tree(&out).unwrap(),
        files(&[("clusters/c/a.yaml", "a\n"), ("clusters/c/b.yaml", "b\n"), ("clusters/c/new.yaml", "n\n"), ("clusters/d/x.yaml", "x\n")])
    );
}
