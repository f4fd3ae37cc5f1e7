//! Byte-range index of a stored catalog: where each blob lives in `catalog.jsonl`, by schema,
//! package and name.
//!
//! Input: blob metadata as blobs are appended ([`IndexBuilder`], while content is written), or the
//! on-disk form ([`Index`], when stored content is opened). Output: sorted, de-duplicated section
//! lists for a query ([`CompactIndex`], what a live catalog keeps, and what `index.json` is
//! written from). Pure; (de)serialization to the on-disk `index.json` is the caller's IO.
//!
//! The on-disk form is upstream's: `{"by_schema":{S:[[offset,len],..]},"by_package":{..},"by_name":{..}}`
//! so that tools reading upstream's index also read ours. A blob is indexed under a key only when
//! that field is non-empty, which is why `?package=foo` does not return the `olm.package` blob (it
//! carries its name in `name`, not `package`).

use std::collections::HashMap;

use serde::ser::{SerializeMap, SerializeSeq, SerializeStruct};
use serde::{Deserialize, Serialize, Serializer};

/// A blob's byte range in `catalog.jsonl`, including its trailing newline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Section {
    pub offset: u64,
    pub len: u64,
}

impl Section {
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }
}

/// Sections keyed by each indexed field, as `index.json` holds them. Lists are kept in offset
/// order because blobs are added in file order. A live catalog keeps the [`CompactIndex`] made
/// from it by [`Index::freeze`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Index {
    #[serde(rename = "by_schema", with = "section_map")]
    pub by_schema: HashMap<String, Vec<Section>>,
    #[serde(rename = "by_package", with = "section_map")]
    pub by_package: HashMap<String, Vec<Section>>,
    #[serde(rename = "by_name", with = "section_map")]
    pub by_name: HashMap<String, Vec<Section>>,
}

/// A `/metas` query; empty strings mean "any".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Query<'a> {
    pub schema: &'a str,
    pub package: &'a str,
    pub name: &'a str,
}

impl Query<'_> {
    pub fn is_empty(&self) -> bool {
        self.schema.is_empty() && self.package.is_empty() && self.name.is_empty()
    }
}

impl Index {
    /// Records a blob appended at `section`.
    pub fn add(&mut self, schema: &str, package: &str, name: &str, section: Section) {
        for (map, key) in [
            (&mut self.by_schema, schema),
            (&mut self.by_package, package),
            (&mut self.by_name, name),
        ] {
            if !key.is_empty() {
                map.entry(key.to_string()).or_default().push(section);
            }
        }
    }

    /// The compact form of this index, for serving (see [`CompactIndex`]).
    pub fn freeze(self) -> CompactIndex {
        let mut sections: Vec<Section> = [&self.by_schema, &self.by_package, &self.by_name]
            .into_iter()
            .flat_map(|map| map.values().flatten().copied())
            .collect();
        sections.sort_unstable();
        sections.dedup();
        let ordinal = |section: &Section| -> u32 {
            // Every listed section is in `sections`. There are fewer than 2^32: each is at least
            // three bytes of content, and image extraction stops at 8 GiB by default.
            sections
                .binary_search(section)
                .map_or(u32::MAX, |i| u32::try_from(i).unwrap_or(u32::MAX))
        };
        let by_schema = Keyed::build(self.by_schema, &ordinal);
        let by_package = Keyed::build(self.by_package, &ordinal);
        let by_name = Keyed::build(self.by_name, &ordinal);
        let mut with_schema = vec![0u64; sections.len().div_ceil(64)];
        for &i in by_schema.ordinals.iter() {
            let i = i as usize;
            if let Some(word) = with_schema.get_mut(i / 64) {
                *word |= 1 << (i % 64);
            }
        }
        CompactIndex {
            sections: sections.into_boxed_slice(),
            with_schema: with_schema.into_boxed_slice(),
            by_schema,
            by_package,
            by_name,
        }
    }
}

/// The index a live catalog keeps: each distinct section once, in file order, and per field its
/// keys (sorted, in one string) with the ordinals of their sections. About a third of the memory
/// of [`Index`]'s maps of owned keys and section lists, which were most of catalogd's heap while
/// serving large catalogs (docs/performance/issue-27.md, thirteenth step).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompactIndex {
    sections: Box<[Section]>,
    /// Bit `i` is set when section `i` is listed under some schema.
    with_schema: Box<[u64]>,
    by_schema: Keyed,
    by_package: Keyed,
    by_name: Keyed,
}

/// One field's keys and the ordinals of their sections.
#[derive(Clone, Debug, Default, PartialEq)]
struct Keyed {
    /// Every key, sorted, one after another.
    keys: Box<str>,
    /// Per key, where it ends in `keys` and where its ordinals end in `ordinals`.
    ends: Box<[(usize, usize)]>,
    /// Section ordinals, ascending per key.
    ordinals: Box<[u32]>,
}

/// Builds the [`CompactIndex`] of content as it is written, blob after blob in file order,
/// without [`Index`]'s maps: each field keeps its keys' text in one string (a key repeated by the
/// blob before is not stored again) and one `(key, ordinal)` entry per listed blob, about a third
/// of the maps' memory while a large catalog is ingested (docs/performance/issue-27.md,
/// fourteenth step).
#[derive(Debug, Default)]
pub struct IndexBuilder {
    /// Sections listed under some field, in file order.
    sections: Vec<Section>,
    by_schema: KeyedBuilder,
    by_package: KeyedBuilder,
    by_name: KeyedBuilder,
}

/// One field's keys while blobs are added.
#[derive(Debug, Default)]
struct KeyedBuilder {
    text: String,
    /// Per listed blob: where its key starts in `text`, its length, and the blob's ordinal.
    entries: Vec<(usize, u32, u32)>,
}

impl IndexBuilder {
    /// Records a blob appended at `section`, after every section added before it. A blob without
    /// schema, package and name is in no list, as with [`Index::add`].
    pub fn add(&mut self, schema: &str, package: &str, name: &str, section: Section) {
        if schema.is_empty() && package.is_empty() && name.is_empty() {
            return;
        }
        // Fewer than 2^32 sections: each is at least three bytes of content, and image
        // extraction stops at 8 GiB by default; a key is shorter than its catalog file (1 GiB).
        let ordinal = u32::try_from(self.sections.len()).unwrap_or(u32::MAX);
        self.sections.push(section);
        self.by_schema.add(schema, ordinal);
        self.by_package.add(package, ordinal);
        self.by_name.add(name, ordinal);
    }

    /// The index to serve from.
    pub fn build(self) -> CompactIndex {
        let by_schema = self.by_schema.build();
        let mut with_schema = vec![0u64; self.sections.len().div_ceil(64)];
        for &i in by_schema.ordinals.iter() {
            let i = i as usize;
            if let Some(word) = with_schema.get_mut(i / 64) {
                *word |= 1 << (i % 64);
            }
        }
        CompactIndex {
            sections: self.sections.into_boxed_slice(),
            with_schema: with_schema.into_boxed_slice(),
            by_schema,
            by_package: self.by_package.build(),
            by_name: self.by_name.build(),
        }
    }
}

impl KeyedBuilder {
    fn add(&mut self, key: &str, ordinal: u32) {
        if key.is_empty() {
            return;
        }
        let len = u32::try_from(key.len()).unwrap_or(u32::MAX);
        // Blobs of one package come together, so the last key is often this one again.
        let start = match self.entries.last() {
            Some(&(start, last_len, _))
                if self.text.get(start..start + last_len as usize) == Some(key) =>
            {
                start
            }
            _ => {
                self.text.push_str(key);
                self.text.len() - key.len()
            }
        };
        self.entries.push((start, len, ordinal));
    }

    fn build(mut self) -> Keyed {
        let text = std::mem::take(&mut self.text);
        let key = |&(start, len, _): &(usize, u32, u32)| -> &str {
            text.get(start..start + len as usize).unwrap_or_default()
        };
        // Stable, so each key's ordinals stay ascending (they were added in order).
        self.entries.sort_by(|a, b| key(a).cmp(key(b)));
        let mut keys = String::new();
        let mut ends = Vec::new();
        let mut ordinals = Vec::with_capacity(self.entries.len());
        let mut last: Option<&str> = None;
        for entry in &self.entries {
            let k = key(entry);
            if last != Some(k) {
                if last.is_some() {
                    ends.push((keys.len(), ordinals.len()));
                }
                keys.push_str(k);
                last = Some(k);
            }
            ordinals.push(entry.2);
        }
        if last.is_some() {
            ends.push((keys.len(), ordinals.len()));
        }
        Keyed {
            keys: keys.into_boxed_str(),
            ends: ends.into_boxed_slice(),
            ordinals: ordinals.into_boxed_slice(),
        }
    }
}

impl Keyed {
    fn build(map: HashMap<String, Vec<Section>>, ordinal: &impl Fn(&Section) -> u32) -> Keyed {
        let mut entries: Vec<(String, Vec<Section>)> = map.into_iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut keys = String::with_capacity(entries.iter().map(|(k, _)| k.len()).sum());
        let mut ordinals =
            Vec::with_capacity(entries.iter().map(|(_, list)| list.len()).sum::<usize>());
        let mut ends = Vec::with_capacity(entries.len());
        for (key, list) in entries {
            keys.push_str(&key);
            let mut listed: Vec<u32> = list.iter().map(ordinal).collect();
            listed.sort_unstable();
            listed.dedup();
            ordinals.extend(listed);
            ends.push((keys.len(), ordinals.len()));
        }
        Keyed {
            keys: keys.into_boxed_str(),
            ends: ends.into_boxed_slice(),
            ordinals: ordinals.into_boxed_slice(),
        }
    }

    fn key(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1].0 };
        &self.keys[start..self.ends[i].0]
    }

    /// The ordinals listed under `key`, ascending; `None` when the key is unknown.
    fn get(&self, key: &str) -> Option<&[u32]> {
        let (mut low, mut high) = (0, self.ends.len());
        let i = loop {
            if low >= high {
                return None;
            }
            let middle = low + (high - low) / 2;
            match self.key(middle).cmp(key) {
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
                std::cmp::Ordering::Equal => break middle,
            }
        };
        let start = if i == 0 { 0 } else { self.ends[i - 1].1 };
        Some(&self.ordinals[start..self.ends[i].1])
    }
}

impl CompactIndex {
    /// Sections matching every non-empty field of `query`, in file order.
    ///
    /// | schema | package | name | result |
    /// |---|---|---|---|
    /// | "" | "" | "" | every blob that has a schema |
    /// | S | – | – | blobs of schema S |
    /// | any | P | – | the above ∩ blobs whose `package` is P |
    /// | any | any | N | the above ∩ blobs whose `name` is N |
    ///
    /// An unknown value yields no sections (an empty 200 response, as upstream).
    pub fn query(&self, query: Query<'_>) -> Vec<Section> {
        let mut filters: Vec<&[u32]> = Vec::with_capacity(3);
        for (keyed, key) in [
            (&self.by_schema, query.schema),
            (&self.by_package, query.package),
            (&self.by_name, query.name),
        ] {
            if !key.is_empty() {
                match keyed.get(key) {
                    Some(list) => filters.push(list),
                    None => return Vec::new(),
                }
            }
        }
        // Smallest list first: the intersection never grows, so it starts as small as it can.
        filters.sort_by_key(|list| list.len());
        let Some((first, rest)) = filters.split_first() else {
            return (0..self.sections.len())
                .filter(|&i| self.has_schema(i))
                .map(|i| self.sections[i])
                .collect();
        };
        let mut matched = rest
            .iter()
            .fold(first.to_vec(), |acc, list| intersect_sorted(&acc, list));
        if query.schema.is_empty() {
            // The base set is the blobs that have a schema.
            matched.retain(|&i| self.has_schema(i as usize));
        }
        matched
            .into_iter()
            .filter_map(|i| self.sections.get(i as usize).copied())
            .collect()
    }

    fn has_schema(&self, ordinal: usize) -> bool {
        self.with_schema
            .get(ordinal / 64)
            .is_some_and(|word| word & (1 << (ordinal % 64)) != 0)
    }
}

/// `index.json` written from the live form: the same bytes as [`Index`]'s serialization of the
/// maps it was made from (keys sorted, sections in file order), without building them again.
impl Serialize for CompactIndex {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut out = ser.serialize_struct("Index", 3)?;
        for (field, keyed) in [
            ("by_schema", &self.by_schema),
            ("by_package", &self.by_package),
            ("by_name", &self.by_name),
        ] {
            out.serialize_field(
                field,
                &KeyedSections {
                    keyed,
                    sections: &self.sections,
                },
            )?;
        }
        out.end()
    }
}

/// One field of a [`CompactIndex`] as upstream's map of key to `[offset, length]` pairs.
struct KeyedSections<'a> {
    keyed: &'a Keyed,
    sections: &'a [Section],
}

impl Serialize for KeyedSections<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut map = ser.serialize_map(Some(self.keyed.ends.len()))?;
        let mut start = 0;
        for (i, &(_, end)) in self.keyed.ends.iter().enumerate() {
            let ordinals = self.keyed.ordinals.get(start..end).unwrap_or_default();
            map.serialize_entry(
                self.keyed.key(i),
                &OrdinalSections {
                    ordinals,
                    sections: self.sections,
                },
            )?;
            start = end;
        }
        map.end()
    }
}

struct OrdinalSections<'a> {
    ordinals: &'a [u32],
    sections: &'a [Section],
}

impl Serialize for OrdinalSections<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut seq = ser.serialize_seq(Some(self.ordinals.len()))?;
        for &i in self.ordinals {
            if let Some(s) = self.sections.get(i as usize) {
                seq.serialize_element(&[s.offset, s.len])?;
            }
        }
        seq.end()
    }
}

/// Intersection of two ascending ordinal lists, ascending.
fn intersect_sorted(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len().min(b.len()));
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

/// Serializes a section as upstream does: a two-element array `[offset, length]`.
mod section_map {
    use std::collections::{BTreeMap, HashMap};

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::Section;

    pub fn serialize<S: Serializer>(
        map: &HashMap<String, Vec<Section>>,
        ser: S,
    ) -> Result<S::Ok, S::Error> {
        // Sorted keys keep the file stable across runs.
        let sorted: BTreeMap<&String, Vec<[u64; 2]>> = map
            .iter()
            .map(|(k, v)| (k, v.iter().map(|s| [s.offset, s.len]).collect()))
            .collect();
        sorted.serialize(ser)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        de: D,
    ) -> Result<HashMap<String, Vec<Section>>, D::Error> {
        let raw: HashMap<String, Vec<[u64; 2]>> = HashMap::deserialize(de)?;
        Ok(raw
            .into_iter()
            .map(|(k, v)| {
                let sections = v
                    .into_iter()
                    .map(|[offset, len]| Section { offset, len })
                    .collect();
                (k, sections)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Index {
        let mut idx = Index::default();
        let mut offset = 0;
        for (schema, package, name, len) in [
            ("olm.package", "", "foo", 10),
            ("olm.channel", "foo", "stable", 20),
            ("olm.bundle", "foo", "foo.v1", 30),
            ("olm.package", "", "bar", 10),
            ("olm.bundle", "bar", "bar.v1", 30),
            ("custom", "foo", "", 5),
        ] {
            idx.add(schema, package, name, Section { offset, len });
            offset += len;
        }
        idx
    }

    fn names(idx: &Index, q: Query<'_>) -> Vec<u64> {
        idx.clone()
            .freeze()
            .query(q)
            .iter()
            .map(|s| s.offset)
            .collect()
    }

    #[test]
    fn empty_query_returns_every_blob_in_file_order() {
        assert_eq!(
            names(&sample(), Query::default()),
            vec![0, 10, 30, 60, 70, 100]
        );
    }

    #[test]
    fn package_filter_does_not_return_the_package_blob() {
        let q = Query {
            package: "foo",
            ..Query::default()
        };
        assert_eq!(names(&sample(), q), vec![10, 30, 100]);
    }

    #[test]
    fn schema_and_name_filters_intersect() {
        let q = Query {
            schema: "olm.package",
            name: "bar",
            ..Query::default()
        };
        assert_eq!(names(&sample(), q), vec![60]);
        let q = Query {
            schema: "olm.bundle",
            package: "foo",
            name: "foo.v1",
        };
        assert_eq!(names(&sample(), q), vec![30]);
    }

    #[test]
    fn a_schemaless_blob_is_never_returned_even_when_its_package_or_name_matches() {
        let mut idx = sample();
        idx.add(
            "",
            "foo",
            "foo.v1",
            Section {
                offset: 105,
                len: 7,
            },
        );
        let package = Query {
            package: "foo",
            ..Query::default()
        };
        assert_eq!(names(&idx, package), vec![10, 30, 100]);
        let name = Query {
            name: "foo.v1",
            ..Query::default()
        };
        assert_eq!(names(&idx, name), vec![30]);
        let both = Query {
            package: "foo",
            name: "foo.v1",
            ..Query::default()
        };
        assert_eq!(names(&idx, both), vec![30]);
        assert_eq!(names(&idx, Query::default()), vec![0, 10, 30, 60, 70, 100]);
    }

    #[test]
    fn package_and_name_filters_without_a_schema_intersect() {
        let q = Query {
            package: "bar",
            name: "bar.v1",
            ..Query::default()
        };
        assert_eq!(names(&sample(), q), vec![70]);
        let q = Query {
            package: "bar",
            name: "foo.v1",
            ..Query::default()
        };
        assert!(sample().freeze().query(q).is_empty());
    }

    #[test]
    fn unknown_values_match_nothing() {
        let q = Query {
            schema: "olm.bundle",
            package: "nope",
            ..Query::default()
        };
        assert!(sample().freeze().query(q).is_empty());
        let q = Query {
            name: "nope",
            ..Query::default()
        };
        assert!(sample().freeze().query(q).is_empty());
    }

    /// What a query means, answered the slow way: every section listed under some schema whose
    /// blob is listed under each non-empty field of the query.
    fn reference_query(idx: &Index, q: Query<'_>) -> Vec<Section> {
        let listed = |map: &HashMap<String, Vec<Section>>, key: &str, s: &Section| {
            key.is_empty() || map.get(key).is_some_and(|list| list.contains(s))
        };
        let mut all: Vec<Section> = idx.by_schema.values().flatten().copied().collect();
        all.sort_unstable();
        all.dedup();
        all.retain(|s| {
            listed(&idx.by_schema, q.schema, s)
                && listed(&idx.by_package, q.package, s)
                && listed(&idx.by_name, q.name, s)
        });
        all
    }

    #[test]
    fn the_compact_index_answers_every_query_as_the_maps_it_was_made_from() {
        // A small linear congruential generator: the same catalogs on every run.
        let mut state: u64 = 7;
        let mut next = |n: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        let values = |prefix: &str, n: u64| -> Vec<String> {
            std::iter::once(String::new())
                .chain((0..n).map(|i| format!("{prefix}{i}")))
                .collect()
        };
        let (schemas, packages, names) = (values("s", 3), values("p", 5), values("n", 40));
        for _catalog in 0..50 {
            let mut idx = Index::default();
            let mut builder = IndexBuilder::default();
            let mut offset = 0;
            for _blob in 0..next(60) {
                let len = 1 + next(9);
                let (schema, package, name) = (
                    &schemas[next(4) as usize],
                    &packages[next(6) as usize],
                    &names[next(41) as usize],
                );
                idx.add(schema, package, name, Section { offset, len });
                builder.add(schema, package, name, Section { offset, len });
                offset += len;
            }
            let built = builder.build();
            let compact = idx.clone().freeze();
            assert_eq!(built, compact, "built while added, or from the maps");
            assert_eq!(
                serde_json::to_string(&built).expect("serializes"),
                serde_json::to_string(&idx).expect("serializes"),
                "index.json from either form"
            );
            for schema in &schemas {
                for package in &packages {
                    for name in names.iter().take(12).chain(["unknown".to_owned()].iter()) {
                        let q = Query {
                            schema,
                            package,
                            name,
                        };
                        assert_eq!(
                            compact.query(q),
                            reference_query(&idx, q),
                            "{q:?} of {idx:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn index_serializes_in_upstream_shape_and_round_trips() {
        let mut idx = Index::default();
        idx.add("olm.package", "", "foo", Section { offset: 0, len: 7 });
        let json = serde_json::to_string(&idx).expect("serializes");
        assert_eq!(
            json,
            r#"{"by_schema":{"olm.package":[[0,7]]},"by_package":{},"by_name":{"foo":[[0,7]]}}"#
        );
        let back: Index = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, idx);
    }
}
