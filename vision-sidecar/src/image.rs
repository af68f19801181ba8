//! The screenshot as the models see it: decoded from PNG into 8-bit RGB,
//! with the two resamplings the pipeline needs (a crop scaled to a fixed
//! height for recognition, and nothing else: detection runs at the
//! window's own resolution, padded to a multiple of 32).

use crate::Error;

/// An 8-bit RGB image, rows packed.
#[derive(Clone)]
pub struct Rgb {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// `width * height * 3` bytes.
    pub data: Vec<u8>,
}

impl Rgb {
    /// Decodes a PNG file (RGB or RGBA, 8 bits).
    pub fn open(path: &std::path::Path) -> Result<Rgb, Error> {
        let file = std::fs::File::open(path)
            .map_err(|e| Error::Image(format!("{}: {e}", path.display())))?;
        let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
        decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
        let mut reader = decoder
            .read_info()
            .map_err(|e| Error::Image(format!("{}: {e}", path.display())))?;
        let size = reader
            .output_buffer_size()
            .ok_or_else(|| Error::Image("the image is too large".into()))?;
        let mut buf = vec![0; size];
        let info = reader
            .next_frame(&mut buf)
            .map_err(|e| Error::Image(format!("{}: {e}", path.display())))?;
        let (width, height) = (info.width as usize, info.height as usize);
        let channels = match info.color_type {
            png::ColorType::Rgb => 3,
            png::ColorType::Rgba => 4,
            png::ColorType::Grayscale => 1,
            png::ColorType::GrayscaleAlpha => 2,
            png::ColorType::Indexed => 3,
        };
        let mut data = Vec::with_capacity(width * height * 3);
        for px in buf[..width * height * channels].chunks_exact(channels) {
            match channels {
                1 | 2 => data.extend_from_slice(&[px[0], px[0], px[0]]),
                _ => data.extend_from_slice(&px[..3]),
            }
        }
        Ok(Rgb {
            width,
            height,
            data,
        })
    }

    /// The pixel at (`x`, `y`).
    pub fn at(&self, x: usize, y: usize) -> [u8; 3] {
        let i = (y * self.width + x) * 3;
        [self.data[i], self.data[i + 1], self.data[i + 2]]
    }

    /// Luminance, one byte a pixel.
    pub fn gray(&self) -> Vec<u8> {
        self.data
            .chunks_exact(3)
            .map(|p| {
                ((u32::from(p[0]) * 299 + u32::from(p[1]) * 587 + u32::from(p[2]) * 114) / 1000)
                    as u8
            })
            .collect()
    }

    /// The region (`x`, `y`, `w`, `h`) scaled to `out_h` rows and
    /// `out_w` columns, bilinear.
    pub fn resized_crop(
        &self,
        (x, y, w, h): (usize, usize, usize, usize),
        out_w: usize,
        out_h: usize,
    ) -> Rgb {
        let mut data = Vec::with_capacity(out_w * out_h * 3);
        let sx = w as f32 / out_w as f32;
        let sy = h as f32 / out_h as f32;
        for oy in 0..out_h {
            let fy = ((oy as f32 + 0.5) * sy - 0.5).clamp(0.0, (h - 1) as f32);
            let (y0, ty) = (fy.floor() as usize, fy.fract());
            let y1 = (y0 + 1).min(h - 1);
            for ox in 0..out_w {
                let fx = ((ox as f32 + 0.5) * sx - 0.5).clamp(0.0, (w - 1) as f32);
                let (x0, tx) = (fx.floor() as usize, fx.fract());
                let x1 = (x0 + 1).min(w - 1);
                let (a, b, c, d) = (
                    self.at(x + x0, y + y0),
                    self.at(x + x1, y + y0),
                    self.at(x + x0, y + y1),
                    self.at(x + x1, y + y1),
                );
                for ch in 0..3 {
                    let top = f32::from(a[ch]) * (1.0 - tx) + f32::from(b[ch]) * tx;
                    let bottom = f32::from(c[ch]) * (1.0 - tx) + f32::from(d[ch]) * tx;
                    data.push((top * (1.0 - ty) + bottom * ty).round() as u8);
                }
            }
        }
        Rgb {
            width: out_w,
            height: out_h,
            data,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crop_scaled_keeps_flat_colours_and_its_size() {
        let img = Rgb {
            width: 4,
            height: 2,
            data: [[10u8, 20, 30]; 8].concat(),
        };
        let c = img.resized_crop((1, 0, 2, 2), 6, 3);
        assert_eq!((c.width, c.height), (6, 3));
        assert!(c.data.chunks(3).all(|p| p == [10, 20, 30]));
        assert_eq!(img.gray()[0], 18);
    }
}
