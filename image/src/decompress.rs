//! Picks the decompressor for one layer blob from its leading bytes (gzip, zstd or plain tar),
//! the way container runtimes auto-detect, so a mislabelled media type still unpacks.
//! Input: a buffered reader over the verified blob. Output: a reader of tar bytes. No network.

use std::io::{self, BufRead, Read};

use flate2::bufread::MultiGzDecoder;
use ruzstd::decoding::{FrameDecoder, StreamingDecoder};

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Compression detected from a layer's first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// No compression: the blob is a tar stream.
    None,
    /// gzip (one or more members).
    Gzip,
    /// zstd (one or more frames, skippable frames ignored).
    Zstd,
}

/// Looks at the first bytes without consuming them.
pub fn detect<R: BufRead>(reader: &mut R) -> io::Result<Compression> {
    let head = reader.fill_buf()?;
    Ok(if head.starts_with(&GZIP_MAGIC) {
        Compression::Gzip
    } else if head.starts_with(&ZSTD_MAGIC) {
        Compression::Zstd
    } else {
        Compression::None
    })
}

/// Wraps `reader` in the decompressor its first bytes call for.
pub fn decompressing_reader<'a, R: BufRead + 'a>(mut reader: R) -> io::Result<Box<dyn Read + 'a>> {
    Ok(match detect(&mut reader)? {
        Compression::None => Box::new(reader),
        Compression::Gzip => Box::new(MultiGzDecoder::new(reader)),
        Compression::Zstd => Box::new(ZstdFrames::new(reader)),
    })
}

/// Decodes consecutive zstd frames (ruzstd's streaming decoder stops after one frame; layers written
/// by chunked compressors contain several, plus skippable metadata frames).
struct ZstdFrames<R: BufRead> {
    current: Option<StreamingDecoder<R, FrameDecoder>>,
    source: Option<R>,
}

impl<R: BufRead> ZstdFrames<R> {
    fn new(source: R) -> Self {
        Self {
            current: None,
            source: Some(source),
        }
    }

    /// Starts the next frame; `Ok(false)` at the end of the input.
    fn start_frame(&mut self) -> io::Result<bool> {
        loop {
            let Some(mut source) = self.source.take() else {
                return Ok(false);
            };
            let head = source.fill_buf()?;
            if head.is_empty() {
                return Ok(false);
            }
            if head.len() >= 4 && head[0] & 0xf0 == 0x50 && head[1..4] == [0x2a, 0x4d, 0x18] {
                let mut header = [0u8; 8];
                source.read_exact(&mut header)?;
                let length = u64::from(u32::from_le_bytes([
                    header[4], header[5], header[6], header[7],
                ]));
                let skipped = io::copy(&mut (&mut source).take(length), &mut io::sink())?;
                if skipped != length {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "zstd skippable frame is truncated",
                    ));
                }
                self.source = Some(source);
                continue;
            }
            let decoder = StreamingDecoder::new_with_decoder(source, FrameDecoder::new())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            self.current = Some(decoder);
            return Ok(true);
        }
    }
}

impl<R: BufRead> Read for ZstdFrames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if let Some(decoder) = self.current.as_mut() {
                let n = decoder.read(buf)?;
                if n > 0 {
                    return Ok(n);
                }
                // Frame finished: hand the source back and look for another frame.
                if let Some(done) = self.current.take() {
                    self.source = Some(done.into_inner());
                }
            }
            if !self.start_frame()? {
                return Ok(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Write};

    fn read_all(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        decompressing_reader(BufReader::new(data))
            .unwrap()
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn plain_bytes_pass_through() {
        assert_eq!(read_all(b"hello tar"), b"hello tar");
    }

    #[test]
    fn gzip_is_detected_by_magic_and_all_members_are_read() {
        let mut data = Vec::new();
        for part in [&b"first "[..], &b"second"[..]] {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            enc.write_all(part).unwrap();
            data.extend(enc.finish().unwrap());
        }
        assert_eq!(read_all(&data), b"first second");
    }

    #[test]
    fn zstd_frames_and_skippable_frames_are_decoded_in_sequence() {
        let mut data = ruzstd::encoding::compress_to_vec(
            &b"frame one, "[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        // A skippable frame (magic 0x184D2A50, little endian length) between two data frames.
        data.extend([0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 9, 9, 9]);
        data.extend(ruzstd::encoding::compress_to_vec(
            &b"frame two"[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        ));
        assert_eq!(read_all(&data), b"frame one, frame two");
    }

    #[test]
    fn corrupt_zstd_is_an_error_not_a_panic() {
        let mut data = ZSTD_MAGIC.to_vec();
        data.extend([0xff; 16]);
        let mut out = Vec::new();
        let result = decompressing_reader(BufReader::new(&data[..]))
            .unwrap()
            .read_to_end(&mut out);
        assert!(result.is_err());
    }
}
