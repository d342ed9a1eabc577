//! The output directory's writes: in place, swapped, staged, interrupted.

use super::*;

/// Writing `new` over `old` (both whole trees in memory).
fn changes<'a>(new: &'a BTreeMap<String, Vec<u8>>, old: &'a BTreeMap<String, Vec<u8>>) -> Update<'a> {
    let mut update = Update { files: new, changed: Vec::new(), removed: Vec::new(), unchanged: Vec::new() };
    for (path, bytes) in new {
        if old.get(path) == Some(bytes) { update.unchanged.push(path) } else { update.changed.push(path) }
    }
    update.removed = old.keys().filter(|p| !new.contains_key(*p)).map(String::as_str).collect();
    update
}

/// Stages writing `new` over `out` up to its journal (the point of no return), as a run
/// killed right after it leaves it; returns the update directory.
fn stage(out: &Path, new: &BTreeMap<String, Vec<u8>>, changed: &[&str], removed: &[&str]) -> anyhow::Result<(PathBuf, ())> {
    let mut staging = Staging::begin(out)?;
    staging.add(&Update { files: new, changed: changed.to_vec(), removed: removed.to_vec(), unchanged: Vec::new() })?;
    staging.seal_journal()?;
    Ok((staging.dir.clone(), ()))
}

fn tree(entries: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
    entries.iter().map(|(path, text)| ((*path).to_owned(), text.as_bytes().to_vec())).collect()
}

/// A rendered tree of `n` servers in `out` of a new temporary directory, written the way
/// `tfrs render` writes it.
fn rendered(n: usize) -> (tempfile::TempDir, PathBuf, BTreeMap<String, Vec<u8>>) {
    let temp = tempfile::tempdir().unwrap();
    let out = temp.path().join("out");
    let files: BTreeMap<String, Vec<u8>> =
        (0..n).map(|i| (format!("clusters/c/servers/s{i}/configmap-s{i}.yaml"), format!("i: {i}\n").into_bytes())).collect();
    write(&out, &changes(&files, &BTreeMap::new())).unwrap();
    assert_eq!(read_tree(&out).unwrap(), files);
    (temp, out, files)
}

#[cfg(unix)]
fn inode(path: &Path) -> u64 {
    std::os::unix::fs::MetadataExt::ino(&fs::metadata(path).unwrap())
}

#[test]
fn a_small_change_is_written_in_place_and_leaves_exactly_the_new_tree() {
    let (_temp, out, old) = rendered(10);
    let mut new = old.clone();
    new.insert("clusters/c/servers/s3/configmap-s3.yaml".into(), b"i: changed\n".to_vec());
    new.remove("clusters/c/servers/s4/configmap-s4.yaml");
    new.insert("clusters/c/servers/s10/secret-s10.yaml".into(), b"new\n".to_vec());
    #[cfg(unix)]
    let (untouched, root) = (inode(&out.join("clusters/c/servers/s0/configmap-s0.yaml")), inode(&out));
    write(&out, &changes(&new, &read_tree(&out).unwrap())).unwrap();
    assert_eq!(read_tree(&out).unwrap(), new);
    assert!(!out.join("clusters/c/servers/s4").exists(), "a directory the update emptied is removed");
    assert!(out.join(MARKER).is_file());
    assert!(!sibling(&out, "tfrs-update").exists());
    #[cfg(unix)]
    assert_eq!(
        (inode(&out.join("clusters/c/servers/s0/configmap-s0.yaml")), inode(&out)),
        (untouched, root),
        "updated in place: the same directory, an unchanged file not rewritten"
    );
}

#[test]
fn a_large_change_updates_the_tree_in_place_and_reports_what_it_wrote() {
    let (_temp, out, old) = rendered(4);
    let new = tree(&[("clusters/c/a.yaml", "a\n"), ("clusters/c/servers/s0/configmap-s0.yaml", "i: 0\n")]);
    #[cfg(unix)]
    let (kept, root) = (inode(&out.join("clusters/c/servers/s0/configmap-s0.yaml")), inode(&out));
    let written = write(&out, &changes(&new, &old)).unwrap();
    assert_eq!(written.keys().collect::<Vec<_>>(), ["clusters/c/a.yaml"], "only the new file is written");
    assert_eq!(written["clusters/c/a.yaml"], Stat::of(&fs::metadata(out.join("clusters/c/a.yaml")).unwrap()));
    assert_eq!(read_tree(&out).unwrap(), new);
    assert!(!out.join("clusters/c/servers/s1").exists());
    assert!(!sibling(&out, "tfrs-update").exists() && !sibling(&out, "tfrs-new").exists());
    #[cfg(unix)]
    assert_eq!((inode(&out.join("clusters/c/servers/s0/configmap-s0.yaml")), inode(&out)), (kept, root), "updated in place");
}

#[test]
fn a_new_directory_is_staged_beside_it_part_by_part_and_swapped_in() {
    let temp = tempfile::tempdir().unwrap();
    let out = temp.path().join("out");
    let (one, two) = (tree(&[("clusters/a/x.yaml", "x\n")]), tree(&[("clusters/b/y.yaml", "y\n")]));
    let mut staging = Staging::begin(&out).unwrap();
    staging.add(&changes(&one, &BTreeMap::new())).unwrap();
    drop(one);
    staging.add(&changes(&two, &BTreeMap::new())).unwrap();
    assert!(!out.exists() && sibling(&out, "tfrs-new").join("clusters/a/x.yaml").is_file(), "staged beside, not yet in place");
    staging.finish().unwrap();
    assert_eq!(read_tree(&out).unwrap(), tree(&[("clusters/a/x.yaml", "x\n"), ("clusters/b/y.yaml", "y\n")]));
    assert!(out.join(MARKER).is_file() && !sibling(&out, "tfrs-new").exists());
    // Dropped unfinished: nothing is left and the tree is as it was.
    let mut staging = Staging::begin(&out).unwrap();
    staging.add(&changes(&tree(&[("clusters/a/x.yaml", "changed\n")]), &read_tree(&out).unwrap())).unwrap();
    drop(staging);
    assert!(!sibling(&out, "tfrs-update").exists());
    assert_eq!(fs::read_to_string(out.join("clusters/a/x.yaml")).unwrap(), "x\n");
}

#[test]
fn an_update_interrupted_after_its_journal_is_finished_by_the_next_run() {
    let (_temp, out, old) = rendered(10);
    let mut new = old.clone();
    new.insert("clusters/c/servers/s1/configmap-s1.yaml".into(), b"one\n".to_vec());
    new.insert("clusters/c/servers/s2/configmap-s2.yaml".into(), b"two\n".to_vec());
    new.remove("clusters/c/servers/s5/configmap-s5.yaml");
    let changed = ["clusters/c/servers/s1/configmap-s1.yaml", "clusters/c/servers/s2/configmap-s2.yaml"];
    let (update, _) = stage(&out, &new, &changed, &["clusters/c/servers/s5/configmap-s5.yaml"]).unwrap();
    // Killed half-way: one staged file moved in, the removal not done.
    fs::rename(update.join(STAGED).join(changed[0]), out.join(changed[0])).unwrap();
    assert_ne!(read_tree(&out).unwrap(), new);
    recover(&out).unwrap();
    assert_eq!(read_tree(&out).unwrap(), new);
    assert!(!update.exists());
    // Carried out again (killed after the last step): nothing changes.
    recover(&out).unwrap();
    assert_eq!(read_tree(&out).unwrap(), new);
}

#[test]
fn a_tree_part_way_through_an_update_is_not_read() {
    let (_temp, out, mut new) = rendered(10);
    check_settled(&out.join("clusters/c")).unwrap();
    new.insert("clusters/c/servers/s1/configmap-s1.yaml".into(), b"one\n".to_vec());
    let _ = stage(&out, &new, &["clusters/c/servers/s1/configmap-s1.yaml"], &[]).unwrap();
    let error = check_settled(&out.join("clusters/c")).unwrap_err().to_string();
    assert!(error.contains("part-way through an update"), "{error}");
    recover(&out).unwrap();
    check_settled(&out.join("clusters/c")).unwrap();
}

#[test]
fn an_update_interrupted_before_its_journal_leaves_the_previous_tree() {
    let (_temp, out, old) = rendered(10);
    let mut new = old.clone();
    new.insert("clusters/c/servers/s1/configmap-s1.yaml".into(), b"one\n".to_vec());
    let (update, _) = stage(&out, &new, &["clusters/c/servers/s1/configmap-s1.yaml"], &[]).unwrap();
    fs::remove_file(update.join(JOURNAL)).unwrap(); // killed before the journal was renamed into place
    recover(&out).unwrap();
    assert_eq!(read_tree(&out).unwrap(), old);
    assert!(!update.exists());
}

#[test]
fn a_swap_killed_between_its_renames_is_restored() {
    let (_temp, out, old) = rendered(3);
    fs::rename(&out, sibling(&out, "tfrs-old")).unwrap();
    fs::create_dir_all(sibling(&out, "tfrs-new")).unwrap();
    recover(&out).unwrap();
    assert_eq!(read_tree(&out).unwrap(), old);
    assert!(!sibling(&out, "tfrs-new").exists());
}

#[cfg(unix)]
#[test]
fn removing_a_tree_does_not_follow_symlinks() {
    let temp = tempfile::tempdir().unwrap();
    let kept = temp.path().join("kept");
    fs::create_dir_all(&kept).unwrap();
    fs::write(kept.join("file"), "x").unwrap();
    let doomed = temp.path().join("doomed");
    fs::create_dir_all(doomed.join("a")).unwrap();
    fs::write(doomed.join("a/file"), "y").unwrap();
    std::os::unix::fs::symlink(&kept, doomed.join("a/link")).unwrap();
    remove_tree(&doomed).unwrap();
    assert!(!doomed.exists());
    assert!(kept.join("file").is_file());
}
