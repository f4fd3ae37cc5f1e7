//! Byte-range index of a stored catalog: where each blob lives in `catalog.jsonl`, by schema,
//! package and name.
//!
//! Input: blob metadata as blobs are appended. Output: sorted, de-duplicated section lists for a
//! query. Pure; (de)serialization to the on-disk `index.json` is the caller's IO.
//!
//! The on-disk form is upstream's: `{"by_schema":{S:[[offset,len],..]},"by_package":{..},"by_name":{..}}`
//! so that tools reading upstream's index also read ours. A blob is indexed under a key only when
//! that field is non-empty, which is why `?package=foo` does not return the `olm.package` blob (it
//! carries its name in `name`, not `package`).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

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

/// Sections keyed by each indexed field. Lists are kept in offset order because blobs are added
/// in file order.
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
        let mut filters: Vec<&[Section]> = Vec::with_capacity(3);
        for (map, key) in [
            (&self.by_schema, query.schema),
            (&self.by_package, query.package),
            (&self.by_name, query.name),
        ] {
            if !key.is_empty() {
                match map.get(key) {
                    Some(list) => filters.push(list),
                    None => return Vec::new(),
                }
            }
        }
        // Smallest list first: the intersection never grows, so it starts as small as it can.
        filters.sort_by_key(|list| list.len());
        let Some((first, rest)) = filters.split_first() else {
            return self.every_blob_with_schema();
        };
        let mut matched = rest
            .iter()
            .fold(first.to_vec(), |acc, list| intersect_sorted(&acc, list));
        if query.schema.is_empty() {
            // The base set is the blobs that have a schema. Checking the few matches against the
            // schema lists is far cheaper than building and sorting that whole set per request
            // (it dominated `/metas?package=` CPU time; see docs/PERFORMANCE.md).
            matched.retain(|section| self.has_schema(section));
        }
        matched
    }

    /// Every section listed under some schema, in file order.
    fn every_blob_with_schema(&self) -> Vec<Section> {
        let mut all: Vec<Section> = self.by_schema.values().flatten().copied().collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    fn has_schema(&self, section: &Section) -> bool {
        self.by_schema.values().any(|list| {
            list.binary_search_by_key(&section.offset, |s| s.offset)
                .is_ok()
        })
    }
}

/// Intersection of two offset-sorted section lists, in offset order.
fn intersect_sorted(a: &[Section], b: &[Section]) -> Vec<Section> {
    let mut out = Vec::with_capacity(a.len().min(b.len()));
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].offset.cmp(&b[j].offset) {
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
        idx.query(q).iter().map(|s| s.offset).collect()
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
        assert!(sample().query(q).is_empty());
    }

    #[test]
    fn unknown_values_match_nothing() {
        let q = Query {
            schema: "olm.bundle",
            package: "nope",
            ..Query::default()
        };
        assert!(sample().query(q).is_empty());
        let q = Query {
            name: "nope",
            ..Query::default()
        };
        assert!(sample().query(q).is_empty());
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
