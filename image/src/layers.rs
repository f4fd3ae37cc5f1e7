//! The layers of one pull applied in order: packed into one file while every entry can be
//! ([`crate::pack`], for [`crate::pull::ExtractFilter::CatalogPack`]), else extracted to disk
//! ([`crate::extract`]). Input: the downloaded layer files, in the manifest's order. Output: the
//! pack and its listing, or the extracted tree; the layer files are removed once applied. No
//! network.

use std::path::{Path, PathBuf};

use crate::error::ImageErrorKind;
use crate::extract::{Extractor, Limits, PathFilter};
use crate::pack::{PackError, Packer};
use crate::pull::PackFiles;

/// Where and for which directory [`crate::pull::ExtractFilter::CatalogPack`] packs.
pub(crate) struct PackTarget {
    pub(crate) dir: PathBuf,
    pub(crate) files: PackFiles,
}

/// The layers applied so far: packed while every entry can be, else extracted to disk. Layer
/// files are kept while packing, so that extraction can start again from the first layer.
pub(crate) struct LayerExtraction {
    /// Present while the layers are being packed.
    packing: Option<(Packer, PackTarget)>,
    /// The layers packed so far (digest, file), for a fall-back to the disk.
    packed_layers: Vec<(String, PathBuf)>,
    /// Present once the layers go to disk.
    disk: Option<Extractor>,
    content_dir: PathBuf,
    filter: PathFilter,
    limits: Limits,
}

impl LayerExtraction {
    pub(crate) fn new(
        content_dir: PathBuf,
        filter: PathFilter,
        limits: Limits,
        pack: Option<PackTarget>,
    ) -> Result<Self, ImageErrorKind> {
        let packing = match pack {
            Some(target) => {
                let packer = Packer::create(&target.files.pack, target.dir.clone(), limits)
                    .map_err(|e| ImageErrorKind::cache("create", &target.files.pack, e))?;
                Some((packer, target))
            }
            None => None,
        };
        Ok(Self {
            packing,
            packed_layers: Vec::new(),
            disk: None,
            content_dir,
            filter,
            limits,
        })
    }

    pub(crate) fn apply(&mut self, digest: String, path: PathBuf) -> Result<(), ImageErrorKind> {
        let Some((packer, _)) = &mut self.packing else {
            return self.apply_on_disk(&digest, &path);
        };
        let packed = packer.apply_layer(open_layer(&path)?);
        self.packed_layers.push((digest, path));
        match packed {
            Ok(()) => Ok(()),
            Err(why) => match self.packing.take() {
                Some((_, target)) => self.leave_pack(target, why),
                None => Ok(()),
            },
        }
    }

    fn apply_on_disk(&mut self, digest: &str, path: &Path) -> Result<(), ImageErrorKind> {
        let extractor = self.disk.get_or_insert_with(|| {
            Extractor::new(&self.content_dir, self.filter.clone(), self.limits)
        });
        extractor
            .apply_layer(digest, open_layer(path)?)
            .map_err(ImageErrorKind::Extract)?;
        std::fs::remove_file(path).map_err(|e| ImageErrorKind::cache("remove layer", path, e))
    }

    /// Gives up the pack: extracts every layer packed so far to disk instead.
    fn leave_pack(&mut self, target: PackTarget, why: PackError) -> Result<(), ImageErrorKind> {
        if let PackError::Write(e) = why {
            return Err(ImageErrorKind::cache("write", &target.files.pack, e));
        }
        tracing::debug!(reason = %why, "catalog directory extracted to disk, not packed");
        let _ = std::fs::remove_file(&target.files.pack);
        for (digest, path) in std::mem::take(&mut self.packed_layers) {
            self.apply_on_disk(&digest, &path)?;
        }
        Ok(())
    }

    /// Checks what only the last layer settles; the bytes extracted and whether it is a pack.
    pub(crate) fn finish(mut self) -> Result<(u64, bool), ImageErrorKind> {
        if let Some((packer, target)) = self.packing.take() {
            let bytes = packer.extracted_bytes();
            match packer.finish(&target.files.listing) {
                Ok(()) => {
                    for (_, path) in &self.packed_layers {
                        std::fs::remove_file(path)
                            .map_err(|e| ImageErrorKind::cache("remove layer", path, e))?;
                    }
                    return Ok((bytes, true));
                }
                Err(why) => self.leave_pack(target, why)?,
            }
        }
        // No layer at all: an empty tree, as the extraction of no layer leaves.
        let extractor = self
            .disk
            .unwrap_or_else(|| Extractor::new(&self.content_dir, self.filter, self.limits));
        let bytes = extractor.extracted_bytes();
        extractor.finish().map_err(ImageErrorKind::Extract)?;
        Ok((bytes, false))
    }
}

fn open_layer(path: &Path) -> Result<std::fs::File, ImageErrorKind> {
    std::fs::File::open(path).map_err(|e| ImageErrorKind::cache("open layer", path, e))
}
