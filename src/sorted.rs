//! Large maps collected from unsorted pairs: a cluster's tens of thousands of paths or job
//! keys, which share long prefixes, so that sorting them on one core is costly.

use rayon::prelude::*;
use std::collections::BTreeMap;

/// `entries` as a map, sorted side by side first (the map then finds one run); of equal keys the
/// last wins, as when collected.
pub(crate) fn into_map<V: Send>(entries: Vec<(String, V)>) -> BTreeMap<String, V> {
    // NB: an unstable sort (several times cheaper than the stable one in parallel) with the
    // position as the tie-break keeps equal keys in their order.
    let mut indexed: Vec<(usize, (String, V))> = entries.into_iter().enumerate().collect();
    indexed.par_sort_unstable_by(|(i, a), (j, b)| a.0.cmp(&b.0).then(i.cmp(j)));
    indexed.into_iter().map(|(_, entry)| entry).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_map_is_the_collected_one_with_the_last_of_equal_keys() {
        let entries: Vec<(String, usize)> = (0..10_000).map(|i| (format!("clusters/c/{}", (i * 7919) % 4_000), i)).collect();
        let expected: std::collections::BTreeMap<String, usize> = entries.clone().into_iter().collect();
        assert_eq!(super::into_map(entries), expected);
    }
}
