use super::*;
use crate::tree::current::{RACY, Records, now_nanos};
use crate::tree::write;
use std::collections::BTreeMap;
use std::path::PathBuf;

const TOP: &str = "clusters/c";

/// A tree below `TOP` in a new output directory.
fn tree(files: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let temp = tempfile::tempdir().expect("temp dir");
    let out = temp.path().join("out");
    for file in files {
        let path = out.join(TOP).join(file);
        fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
        fs::write(&path, file.as_bytes()).expect("file");
    }
    (temp, out)
}

/// The records a render saves after listing `out` with `records`, saved long enough after the
/// listing for every stat to be trusted; and the listing.
fn listed(out: &Path, records: &Records) -> (Records, Listing) {
    let listing = list(out, TOP, records).expect("listed");
    let files: BTreeMap<String, crate::tree::current::Record> = listing
        .files
        .iter()
        .map(|(path, stat)| (path.clone(), crate::tree::current::Record { stat: *stat, content: crate::object::ContentId::of(b"") }))
        .collect();
    let dirs = listing.dirs.iter().cloned().collect();
    // NB: the clock tick that stamps a directory's change is coarse: let it pass before the
    // caller changes anything, as the records' racy window does for a real render.
    std::thread::sleep(std::time::Duration::from_millis(30));
    (Records { saved: now_nanos() + 2 * RACY, files, dirs }, listing)
}

/// [`list_below`] with `records`, as a render lists.
fn list(out: &Path, below: &str, records: &Records) -> anyhow::Result<Listing> {
    list_below(out, below, &records.recorded())
}

/// The paths the listing without records finds.
fn walked(out: &Path) -> Vec<String> {
    write::list_below(out, TOP, &|_| false).expect("walked").into_iter().map(|(path, _)| path).collect()
}

fn paths(listing: &Listing) -> Vec<String> {
    listing.files.iter().map(|(path, _)| path.clone()).collect()
}

#[test]
fn unchanged_directories_are_trusted_and_every_change_is_found() {
    let (_temp, out) = tree(&["a.yaml", "n1/b.yaml", "n1/s/c.yaml", "n1/s/d.yaml", "n2/e.yaml", "n3/t/f.yaml"]);
    let (records, first) = listed(&out, &Records::default());
    assert_eq!(paths(&first), walked(&out));
    assert_eq!(first.trusted_dirs, 0, "nothing recorded yet");
    assert_eq!(first.dirs.len(), 6, "every directory is recorded: {:?}", first.dirs);
    let (records, again) = listed(&out, &records);
    assert_eq!(paths(&again), walked(&out));
    assert_eq!(again.trusted_dirs, 6, "an unchanged tree is listed from its records");

    // An edited file keeps its directory's stat: still listed, with its new stat.
    let edited = out.join(TOP).join("n1/s/c.yaml");
    fs::write(&edited, "edited, longer than before").expect("edit");
    let (records, after) = listed(&out, &records);
    let stat = after.files.iter().find(|(path, _)| path.ends_with("n1/s/c.yaml")).expect("listed").1;
    assert_eq!(stat.size, 26);
    // Added, removed, a file turned into a directory, a new directory, a directory removed.
    fs::write(out.join(TOP).join("n1/s/new.yaml"), "n").expect("add");
    fs::remove_file(out.join(TOP).join("n2/e.yaml")).expect("remove");
    fs::remove_file(out.join(TOP).join("a.yaml")).expect("remove");
    fs::create_dir_all(out.join(TOP).join("a.yaml/deep")).expect("dir");
    fs::write(out.join(TOP).join("a.yaml/deep/g.yaml"), "g").expect("file");
    fs::remove_dir_all(out.join(TOP).join("n3/t")).expect("remove dir");
    let (records, after) = listed(&out, &records);
    assert_eq!(paths(&after), walked(&out));
    assert!(paths(&after).contains(&format!("{TOP}/a.yaml/deep/g.yaml")) && paths(&after).contains(&format!("{TOP}/n1/s/new.yaml")));
    assert!(after.trusted_dirs > 0 && after.trusted_dirs < after.dirs.len(), "{} of {}", after.trusted_dirs, after.dirs.len());
    // The new directories are recorded: the next listing trusts them all.
    let (_, settled) = listed(&out, &records);
    assert_eq!(paths(&settled), walked(&out));
    assert_eq!(settled.trusted_dirs, settled.dirs.len());
}

#[test]
fn a_directory_is_not_trusted_within_the_racy_window_or_when_its_records_are_wrong() {
    let (_temp, out) = tree(&["n1/b.yaml", "n1/s/c.yaml"]);
    let (mut records, _) = listed(&out, &Records::default());
    records.saved = now_nanos();
    let fresh = list(&out, TOP, &records).expect("listed");
    assert_eq!(fresh.trusted_dirs, 0, "changed less than the racy window before the records were saved");
    assert_eq!(paths(&fresh), walked(&out));
    // Records naming a file that is not there: its directory is read after all.
    let (mut records, _) = listed(&out, &Records::default());
    let (_, again) = listed(&out, &records);
    assert_eq!(again.trusted_dirs, 3);
    let ghost =
        crate::tree::current::Record { stat: write::Stat { size: 0, mtime: 0, ino: 0 }, content: crate::object::ContentId::of(b"") };
    records.files.insert(format!("{TOP}/n1/s/ghost.yaml"), ghost);
    let read = list(&out, TOP, &records).expect("listed");
    assert_eq!(paths(&read), walked(&out));
    assert_eq!(read.trusted_dirs, 2, "the directory with a missing file was read");
    // Records of another tree entirely, and none at all.
    let (_temp2, elsewhere) = tree(&["x/y.yaml"]);
    let (foreign, _) = listed(&elsewhere, &Records::default());
    assert_eq!(paths(&list(&out, TOP, &foreign).expect("listed")), walked(&out));
    assert!(paths(&list(&out, "clusters/none", &records).expect("listed")).is_empty());
}

#[cfg(unix)]
#[test]
fn a_directory_replaced_by_a_link_is_followed_as_without_records() {
    let (_temp, out) = tree(&["n1/s/c.yaml", "n1/s/d/e.yaml", "n2/f.yaml"]);
    let (records, _) = listed(&out, &Records::default());
    // The directory moved away keeps its stats and those of what it holds; a link stands in
    // its place.
    let moved = out.join("moved");
    fs::rename(out.join(TOP).join("n1/s"), &moved).expect("move");
    std::os::unix::fs::symlink(&moved, out.join(TOP).join("n1/s")).expect("link");
    fs::write(moved.join("d/late.yaml"), "l").expect("file");
    let (records, listing) = listed(&out, &records);
    assert_eq!(paths(&listing), walked(&out));
    assert!(paths(&listing).contains(&format!("{TOP}/n1/s/d/late.yaml")));
    let (records, again) = listed(&out, &records);
    assert_eq!(paths(&again), walked(&out));
    // What is behind the link changes: found again, the directory holding the link being read.
    fs::write(moved.join("d/later.yaml"), "l").expect("file");
    let (_, after) = listed(&out, &records);
    assert_eq!(paths(&after), walked(&out));
    assert!(paths(&after).contains(&format!("{TOP}/n1/s/d/later.yaml")));
}

#[test]
fn a_directory_missing_from_the_records_is_still_found() {
    let (_temp, out) = tree(&["n1/s/c.yaml", "n1/s/t/d.yaml", "n2/e.yaml"]);
    let (records, _) = listed(&out, &Records::default());
    let (mut records, again) = listed(&out, &records);
    assert_eq!(again.trusted_dirs, again.dirs.len());
    // The records lost `n1/s` and `n1/s/t` (their files' records stay): their parent,
    // unchanged and trusted, does not name them, so it is read.
    records.dirs.remove(&format!("{TOP}/n1/s"));
    records.dirs.remove(&format!("{TOP}/n1/s/t"));
    fs::write(out.join(TOP).join("n1/s/stray.yaml"), "s").expect("stray");
    let (records, listing) = listed(&out, &records);
    assert_eq!(paths(&listing), walked(&out));
    // The records lost `n1/s/t` only, the deepest: found through its files' records.
    let (mut records, _) = listed(&out, &records);
    records.dirs.remove(&format!("{TOP}/n1/s/t"));
    fs::write(out.join(TOP).join("n1/s/t/stray.yaml"), "s").expect("stray");
    let (_, listing) = listed(&out, &records);
    assert_eq!(paths(&listing), walked(&out));
}

#[test]
fn a_directory_whose_parent_the_records_lost_has_the_directory_above_read() {
    // `n1/s` holds a directory only: no file record names it.
    let (_temp, out) = tree(&["n1/b.yaml", "n1/s/t/d.yaml"]);
    let (records, _) = listed(&out, &Records::default());
    let (mut records, _) = listed(&out, &records);
    records.dirs.remove(&format!("{TOP}/n1/s"));
    fs::write(out.join(TOP).join("n1/s/t/stray.yaml"), "s").expect("stray");
    let listing = list(&out, TOP, &records).expect("listed");
    assert_eq!(paths(&listing), walked(&out));
}

#[test]
fn a_directory_gone_while_listed_has_no_entries() {
    let (_temp, out) = tree(&["n1/b.yaml"]);
    let skip = |_: &str| false;
    let listing = read_dir(&out.join("nowhere"), "nowhere".to_owned(), None, &skip).expect("no error");
    assert!(listing.files.is_empty() && listing.dirs.is_empty());
    let file = out.join(TOP).join("n1/b.yaml");
    assert!(read_dir(&file, "b".to_owned(), None, &skip).expect("no error").files.is_empty(), "a file now");
}

#[test]
fn a_directory_the_records_cannot_name_has_its_parent_read_every_time() {
    let (_temp, out) = tree(&["n1/b.yaml", "n1/we\nird/c.yaml", "n2/e.yaml"]);
    let (records, first) = listed(&out, &Records::default());
    assert!(first.dirs.iter().all(|(dir, _)| !dir.contains('\n')));
    let bytes = records.to_bytes();
    let mut readable = records.clone();
    readable.files.retain(|path, _| !path.contains('\n'));
    assert_eq!(Records::from_bytes(&bytes), readable, "the records still read back, without what they cannot name");
    // NB: as saved and read back, which leave the file out.
    let records = Records::from_bytes(&bytes);
    let (_, again) = listed(&out, &records);
    assert_eq!(paths(&again), walked(&out));
    assert_eq!(again.trusted_dirs, 2, "the top and `n2`; `n1` is read");
    fs::write(out.join(TOP).join("n1/we\nird/late.yaml"), "l").expect("late");
    let (_, after) = listed(&out, &records);
    assert_eq!(paths(&after), walked(&out));
}

/// A small deterministic generator (no dependency for one test).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        usize::try_from(self.0 >> 33).expect("fits") % n
    }
}

/// Random changes to a recorded tree, rounds after rounds: each listing with the last records
/// finds exactly what a full walk finds.
#[test]
fn random_changes_are_all_found() {
    let (_temp, out) = tree(&["a.yaml", "n1/b.yaml", "n1/s/c.yaml", "n1/s/t/d.yaml", "n2/e.yaml", "n3/u/v/f.yaml"]);
    let top = out.join(TOP);
    let mut rng = Lcg(7);
    let (mut records, _) = listed(&out, &Records::default());
    for round in 0..40 {
        let dirs: Vec<PathBuf> = std::iter::once(top.clone())
            .chain(walked(&out).iter().filter_map(|p| out.join(p).parent().map(Path::to_path_buf)))
            .filter(|d| d.starts_with(&top))
            .collect();
        let files: Vec<PathBuf> = walked(&out).iter().map(|p| out.join(p)).collect();
        for _ in 0..1 + rng.below(3) {
            let dir = &dirs[rng.below(dirs.len())];
            match rng.below(6) {
                0 => fs::write(dir.join(format!("new{round}.yaml")), "n").expect("add"),
                1 if !files.is_empty() => drop(fs::remove_file(&files[rng.below(files.len())])),
                2 => {
                    fs::create_dir_all(dir.join(format!("d{round}/e"))).expect("dirs");
                    fs::write(dir.join(format!("d{round}/e/f.yaml")), "f").expect("file");
                }
                3 if dir != &top => drop(fs::remove_dir_all(dir)),
                4 if !files.is_empty() => {
                    let file = &files[rng.below(files.len())];
                    drop(fs::rename(file, dir.join(format!("moved{round}.yaml"))));
                }
                _ if !files.is_empty() => drop(fs::write(&files[rng.below(files.len())], format!("edited {round}"))),
                _ => {}
            }
        }
        let (next, listing) = listed(&out, &records);
        assert_eq!(paths(&listing), walked(&out), "round {round}");
        records = next;
    }
}
