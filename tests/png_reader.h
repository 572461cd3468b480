#pragma once
// A small PNG reader for the browser test: 8-bit RGB or RGBA, not interlaced (what Chromium's
// --screenshot writes). Returns the pixels, so a test can tell a blank screenshot from a page.
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace kvsim::testing {

struct PngImage {
    std::uint32_t width = 0;
    std::uint32_t height = 0;
    int channels = 0;
    std::vector<std::uint8_t> pixels;  // rows of width * channels bytes, unfiltered
};

inline std::uint32_t png_u32(const std::string& s, std::size_t at) {
    return (std::uint32_t(std::uint8_t(s[at])) << 24) | (std::uint32_t(std::uint8_t(s[at + 1])) << 16) |
           (std::uint32_t(std::uint8_t(s[at + 2])) << 8) | std::uint32_t(std::uint8_t(s[at + 3]));
}

inline std::uint8_t png_paeth(int a, int b, int c) {
    const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
    return static_cast<std::uint8_t>(pa <= pb && pa <= pc ? a : (pb <= pc ? b : c));
}

// Undoes the per-row filters (PNG spec, section 9) in place into image.pixels.
inline bool png_unfilter(const std::vector<std::uint8_t>& raw, PngImage& image) {
    const std::size_t stride = std::size_t(image.width) * image.channels, bpp = std::size_t(image.channels);
    if (raw.size() != (stride + 1) * image.height) return false;
    image.pixels.assign(stride * image.height, 0);
    for (std::size_t y = 0; y < image.height; ++y) {
        const std::uint8_t filter = raw[y * (stride + 1)];
        const std::uint8_t* in = &raw[y * (stride + 1) + 1];
        std::uint8_t* out = &image.pixels[y * stride];
        const std::uint8_t* up = y > 0 ? out - stride : nullptr;
        for (std::size_t x = 0; x < stride; ++x) {
            const int a = x >= bpp ? out[x - bpp] : 0, b = up ? up[x] : 0, c = (up && x >= bpp) ? up[x - bpp] : 0;
            int v = in[x];
            if (filter == 1) v += a;
            else if (filter == 2) v += b;
            else if (filter == 3) v += (a + b) / 2;
            else if (filter == 4) v += png_paeth(a, b, c);
            else if (filter != 0) return false;
            out[x] = static_cast<std::uint8_t>(v);
        }
    }
    return true;
}

inline std::optional<PngImage> read_png(const std::string& bytes) {
    if (bytes.size() < 33 || bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return std::nullopt;
    PngImage image;
    std::string idat;
    for (std::size_t at = 8; at + 8 <= bytes.size();) {
        const std::uint32_t length = png_u32(bytes, at);
        const std::string type = bytes.substr(at + 4, 4);
        if (at + 12 + length > bytes.size()) return std::nullopt;
        if (type == "IHDR") {
            image.width = png_u32(bytes, at + 8);
            image.height = png_u32(bytes, at + 12);
            const int depth = bytes[at + 16], color = bytes[at + 17], interlace = bytes[at + 20];
            if (depth != 8 || (color != 2 && color != 6) || interlace != 0) return std::nullopt;
            image.channels = color == 2 ? 3 : 4;
        } else if (type == "IDAT") {
            idat += bytes.substr(at + 8, length);
        }
        at += 12 + length;
    }
    std::vector<std::uint8_t> raw((std::size_t(image.width) * image.channels + 1) * image.height);
    uLongf raw_size = static_cast<uLongf>(raw.size());
    if (image.channels == 0 ||
        uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(idat.data()), static_cast<uLong>(idat.size())) != Z_OK ||
        raw_size != raw.size() || !png_unfilter(raw, image))
        return std::nullopt;
    return image;
}

}  // namespace kvsim::testing
