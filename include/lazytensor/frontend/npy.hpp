// SPDX-License-Identifier: MIT
// .npy files, NumPy's format for one array: lt::save_npy writes a tensor (version 1.0, C order,
// little-endian), lt::load_npy reads one into a Tensor<T> of the file's own dtype (versions 1.0
// to 3.0, C or Fortran order, either byte order). Data moves in pieces between the file and
// the device, never as a whole copy in host memory. NumPy has no bfloat16: save_npy refuses it
// (cast to float32 first), and load_npy<lt::bfloat16> reads a float32 file, rounded.
#pragma once

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "creation.hpp"
#include "complex.hpp"
#include "tensor.hpp"

namespace lazytensor {

namespace detail::npy {

inline constexpr char magic[] = "\x93NUMPY";
inline constexpr std::size_t magic_size = 6;
/// The piece of data that goes through host memory at a time.
inline constexpr std::size_t piece_bytes = std::size_t(4) << 20;

/// What a .npy header describes.
struct Header {
    DType dtype = DType::Float32;
    std::string descr;           // as written in the file, e.g. "<f4"
    bool swap = false;           // the file's byte order is not this machine's
    bool fortran_order = false;  // the data is column-major
    Shape shape;
    std::int64_t numel = 0;
    std::size_t data_bytes = 0;
};

inline bool little_endian_host() {
    const std::uint16_t one = 1;
    unsigned char first = 0;
    std::memcpy(&first, &one, 1);
    return first == 1;
}

/// Reverses the bytes of each `size`-byte element.
inline void swap_bytes(unsigned char* data, std::size_t bytes, std::size_t size) {
    for (std::size_t at = 0; at + size <= bytes; at += size)
        for (std::size_t i = 0, j = size - 1; i < j; ++i, --j) std::swap(data[at + i], data[at + j]);
}

/// The descr NumPy writes for a dtype on a little-endian machine.
inline const char* descr_of(DType t) {
    switch (t) {
        case DType::Bool: return "|b1";
        case DType::UInt8: return "|u1";
        case DType::Int8: return "|i1";
        case DType::Int16: return "<i2";
        case DType::UInt16: return "<u2";
        case DType::Int32: return "<i4";
        case DType::UInt32: return "<u4";
        case DType::Int64: return "<i8";
        case DType::UInt64: return "<u8";
        case DType::Float16: return "<f2";
        case DType::BFloat16: return "?";  // NumPy has none: save_npy refuses bfloat16
        case DType::Float32: return "<f4";
        case DType::Float64: return "<f8";
        case DType::Complex64: return "<c8";
        case DType::Complex128: return "<c16";
    }
    return "?";
}

/// The C++ spelling of a dtype's element type, as lt::load_npy<...> takes it.
inline const char* cpp_type_of(DType t) {
    switch (t) {
        case DType::Bool: return "bool";
        case DType::UInt8: return "uint8_t";
        case DType::Int8: return "int8_t";
        case DType::Int16: return "int16_t";
        case DType::UInt16: return "uint16_t";
        case DType::Int32: return "int32_t";
        case DType::UInt32: return "uint32_t";
        case DType::Int64: return "int64_t";
        case DType::UInt64: return "uint64_t";
        case DType::Float16: return "lt::half";
        case DType::BFloat16: return "lt::bfloat16";
        case DType::Float32: return "float";
        case DType::Float64: return "double";
        case DType::Complex64: return "std::complex<float>";
        case DType::Complex128: return "std::complex<double>";
    }
    return "?";
}

/// A NumPy type code without its byte order ("c8", "U5", "O") in words, for messages.
inline std::string describe_code(const std::string& code) {
    if (code.empty()) return "an empty type code";
    std::size_t bytes = 0;
    bool numeric = code.size() > 1 && code.size() <= 4;
    for (std::size_t i = 1; i < code.size() && numeric; ++i) numeric = code[i] >= '0' && code[i] <= '9';
    if (numeric) bytes = static_cast<std::size_t>(std::stoul(code.substr(1)));
    const std::string bits = std::to_string(bytes * 8);
    switch (numeric ? code[0] : '\0') {
        case 'i': return "int" + bits;
        case 'u': return "uint" + bits;
        case 'f': return "float" + bits;
        case 'c': return "complex" + bits;
        case 'b': return "a bool of " + std::to_string(bytes) + " bytes";
        default: break;
    }
    switch (code[0]) {
        case 'O': return "Python objects";
        case 'U': return "unicode strings";
        case 'S':
        case 'a': return "byte strings";
        case 'V': return "raw bytes";
        case 'M': return "datetime64";
        case 'm': return "timedelta64";
        default: return "not a NumPy type code";
    }
}

/// The header text as a message can show it: non-printable bytes escaped, long text cut.
inline std::string excerpt(const std::string& text) {
    std::string out;
    const std::size_t shown = std::min<std::size_t>(text.size(), 160);
    for (std::size_t i = 0; i < shown; ++i) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
        } else {
            static const char hex[] = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    if (shown < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
    return out;
}

/// A header as a message shows it: without the padding spaces and the newline at its end.
inline std::string shown_header(const std::string& header) {
    std::size_t end = header.size();
    while (end > 0 && (header[end - 1] == ' ' || header[end - 1] == '\n')) --end;
    return excerpt(header.substr(0, end));
}

[[noreturn]] inline void bad_file(const std::string& path, const std::string& problem) {
    fail<FileError>("lt::load_npy: ", path, ": ", problem);
}

/// The header's dictionary, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }:
/// a Python literal with exactly these three keys, parsed strictly (anything else is a
/// FileError naming the byte where it goes wrong).
class HeaderParser {
public:
    HeaderParser(const std::string& text, const std::string& path) : text_(text), path_(path) {}

    Header parse() {
        Header h;
        bool has_descr = false, has_order = false, has_shape = false;
        expect('{', "'{' (a .npy header is a Python dictionary)");
        while (!eat('}')) {
            const std::string key = string_literal();
            expect(':', "':' after the key");
            if (key == "descr") {
                once(has_descr, key);
                skip_space();
                if (at_char('[') || at_char('('))
                    fail<DTypeError>("lt::load_npy: ", path_, ": the file holds a structured dtype (fields ",
                                     excerpt(text_.substr(pos_, 60)),
                                     "...), which lazytensor does not have; it loads arrays of bool, uint8, int32, "
                                     "int64, float16, float32 or float64");
                h.descr = string_literal();
            } else if (key == "fortran_order") {
                once(has_order, key);
                if (word("True")) h.fortran_order = true;
                else if (word("False")) h.fortran_order = false;
                else syntax("fortran_order must be True or False");
            } else if (key == "shape") {
                once(has_shape, key);
                h.shape = shape_tuple();
            } else {
                syntax("unexpected key '" + excerpt(key) +
                       "' (a .npy header has exactly the keys 'descr', 'fortran_order' and 'shape')");
            }
            if (!eat(',')) {
                expect('}', "',' or '}' after a value");
                break;
            }
        }
        skip_space();
        if (pos_ != text_.size()) syntax("unexpected text after the dictionary");
        if (!has_descr || !has_order || !has_shape)
            bad_file(path_, concat("the header has no '", !has_descr ? "descr" : !has_order ? "fortran_order" : "shape",
                                   "' key: ", shown_header(text_)));
        return h;
    }

private:
    [[noreturn]] void syntax(const std::string& problem) {
        bad_file(path_, concat("the header is not a valid .npy header: ", problem, " (at byte ", pos_,
                               " of the header ", shown_header(text_), ")"));
    }
    static bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
    void skip_space() {
        while (pos_ < text_.size() && space(text_[pos_])) ++pos_;
    }
    bool at_char(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
    bool eat(char c) {
        skip_space();
        if (!at_char(c)) return false;
        ++pos_;
        return true;
    }
    void expect(char c, const char* what) {
        if (!eat(c)) syntax(concat("expected ", what));
    }
    void once(bool& seen, const std::string& key) {
        if (seen) syntax("the key '" + key + "' appears twice");
        seen = true;
    }
    bool word(const char* w) {
        skip_space();
        const std::size_t n = std::strlen(w);
        if (text_.compare(pos_, n, w) != 0) return false;
        const std::size_t end = pos_ + n;
        if (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_'))
            return false;
        pos_ = end;
        return true;
    }
    std::string string_literal() {
        skip_space();
        if (!at_char('\'') && !at_char('"')) syntax("expected a quoted string");
        const char quote = text_[pos_++];
        const std::size_t start = pos_;
        while (pos_ < text_.size() && text_[pos_] != quote && text_[pos_] != '\n') {
            if (text_[pos_] == '\\') syntax("an escape sequence in a string (no .npy header has one)");
            ++pos_;
        }
        if (pos_ == text_.size() || text_[pos_] == '\n') syntax("a string is not closed");
        return text_.substr(start, pos_++ - start);
    }
    std::int64_t extent() {
        skip_space();
        const bool negative = at_char('-');
        if (negative) ++pos_;
        if (pos_ == text_.size() || text_[pos_] < '0' || text_[pos_] > '9') syntax("expected a whole number in the shape");
        std::int64_t value = 0;
        for (; pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9'; ++pos_) {
            const int digit = text_[pos_] - '0';
            if (value > (std::numeric_limits<std::int64_t>::max() - digit) / 10)
                syntax("an extent in the shape does not fit in 64 bits");
            value = value * 10 + digit;
        }
        if (at_char('L') || at_char('l')) ++pos_;  // written by Python 2
        if (negative && value != 0) syntax(concat("negative extent -", value, " in the shape"));
        return value;
    }
    Shape shape_tuple() {
        skip_space();
        if (!eat('(')) syntax("the shape must be a tuple such as (2, 3), (5,) or ()");
        Shape shape;
        if (eat(')')) return shape;
        for (;;) {
            shape.push_back(extent());
            if (eat(',')) {
                if (eat(')')) return shape;
                continue;
            }
            expect(')', "',' or ')' in the shape");
            if (shape.size() == 1) syntax("a shape (n) without a comma is a number, not a tuple: write (n,)");
            return shape;
        }
    }

    const std::string& text_;
    const std::string& path_;
    std::size_t pos_ = 0;
};

/// The dtype a descr names (DTypeError naming the file for one lazytensor does not have), and
/// whether its byte order is not this machine's.
inline std::pair<DType, bool> descr_dtype(const std::string& descr, const std::string& path) {
    char order = '=';
    std::string code = descr;
    if (!code.empty() && std::strchr("<>|=", code[0])) {
        order = code[0];
        code.erase(0, 1);
    }
    DType t;
    if (code == "b1") t = DType::Bool;
    else if (code == "u1") t = DType::UInt8;
    else if (code == "i1") t = DType::Int8;
    else if (code == "i2") t = DType::Int16;
    else if (code == "u2") t = DType::UInt16;
    else if (code == "i4") t = DType::Int32;
    else if (code == "u4") t = DType::UInt32;
    else if (code == "i8") t = DType::Int64;
    else if (code == "u8") t = DType::UInt64;
    else if (code == "f2") t = DType::Float16;
    else if (code == "f4") t = DType::Float32;
    else if (code == "f8") t = DType::Float64;
    else if (code == "c8") t = DType::Complex64;
    else if (code == "c16") t = DType::Complex128;
    else
        fail<DTypeError>("lt::load_npy: ", path, ": the file's dtype '", excerpt(descr), "' (", describe_code(code),
                         ") is not one lazytensor has; it loads bool, int8, int16, int32, int64, uint8, uint16, uint32, "
                         "uint64, float16, float32, float64, complex64 and complex128 arrays");
    // '|' (no byte order) and '=' mean this machine's, as in NumPy.
    const bool swap = dtype_size(t) > 1 && (order == '<' || order == '>') && (order == '<') != little_endian_host();
    return {t, swap};
}

/// A file opened for reading, closed when it goes.
class File {
public:
    File(const std::string& path, const char* mode) : file_(std::fopen(path.c_str(), mode)) {}
    File(const File&) = delete;
    File& operator=(const File&) = delete;
    ~File() {
        if (file_) std::fclose(file_);
    }
    std::FILE* get() const { return file_; }

private:
    std::FILE* file_;
};

/// Reads the preamble and header of an open .npy file, checking them against the file's size.
inline Header read_header(std::FILE* file, std::uintmax_t file_size, const std::string& path) {
    unsigned char pre[12] = {};
    const std::size_t got = std::fread(pre, 1, 8, file);
    if (got == 0) bad_file(path, "not a .npy file: the file is empty");
    if (std::memcmp(pre, magic, std::min(got, magic_size)) != 0)
        bad_file(path, "not a .npy file: it does not start with NumPy's magic string \\x93NUMPY");
    const auto truncated = [&](const char* part) {
        bad_file(path, concat("the file is truncated: it ends (after ", file_size, " bytes) inside the ", part));
    };
    if (got < 8) truncated("preamble");
    const int major = pre[6], minor = pre[7];
    if (major < 1 || major > 3 || minor != 0)
        bad_file(path, concat("unsupported .npy format version ", major, ".", minor,
                              " (lazytensor reads versions 1.0, 2.0 and 3.0)"));
    const std::size_t length_bytes = major == 1 ? 2 : 4;
    if (std::fread(pre + 8, 1, length_bytes, file) != length_bytes) truncated("header length");
    std::size_t header_length = 0;
    for (std::size_t i = length_bytes; i-- > 0;) header_length = header_length << 8 | pre[8 + i];
    const std::size_t data_offset = 8 + length_bytes + header_length;
    if (data_offset > file_size)
        bad_file(path, concat("the file is truncated: its header is ", header_length, " bytes long, but the file ends after ",
                              file_size, " bytes"));
    std::string text(header_length, '\0');
    if (header_length && std::fread(&text[0], 1, header_length, file) != header_length) truncated("header");

    Header h = HeaderParser(text, path).parse();
    std::tie(h.dtype, h.swap) = descr_dtype(h.descr, path);
    // Every partial product of the extents (strides, counts) must fit, zero extents or not.
    std::int64_t product = 1;
    for (std::int64_t e : h.shape)
        if (e != 0 && __builtin_mul_overflow(product, e, &product))
            bad_file(path, concat("the header's shape ", h.shape, " is too large: its extents multiply past 64 bits"));
    h.numel = lazytensor::numel(h.shape);
    if (__builtin_mul_overflow(static_cast<std::size_t>(h.numel), dtype_size(h.dtype), &h.data_bytes))
        bad_file(path, concat("the header's shape ", h.shape, " of ", h.dtype, " needs more bytes than a 64-bit size can hold"));
    const std::uintmax_t available = file_size - data_offset;
    if (available < h.data_bytes)
        bad_file(path, concat("the file is truncated: shape ", h.shape, " of ", h.dtype, " needs ", h.data_bytes,
                              " bytes of data, the file has ", available, " after its header"));
    if (available > h.data_bytes)
        bad_file(path, concat("the file has ", available - h.data_bytes, " bytes after its data (shape ", h.shape, " of ",
                              h.dtype, ": ", h.data_bytes, " bytes); lazytensor does not load files with trailing bytes"));
    return h;
}

/// The file's array as a node on `device`: a new buffer filled from the file a piece at a time,
/// row-major (a Fortran-order file is transposed on the device). Checks the file's dtype
/// against `expected` before reading any data; bfloat16 expects a float32 file (NumPy has no
/// bfloat16) and rounds its values on the device (`for_bfloat16`: the float32 load of that).
inline NodePtr load(const std::string& path, Device device, DType expected, bool for_bfloat16 = false) {
    if (expected == DType::BFloat16) {
        NodePtr rounded = graph::cast(load(path, device, DType::Float32, true), DType::BFloat16);
        realize_nodes({rounded.get()});
        return rounded;
    }
    backend_for(device);  // an unavailable device fails before the file is read
    File file(path, "rb");
    if (!file.get()) bad_file(path, concat("cannot open the file: ", std::strerror(errno)));
    std::error_code ec;
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    if (ec) bad_file(path, concat("cannot read the file: ", ec.message()));
    const Header h = read_header(file.get(), size, path);
    if (h.dtype != expected && for_bfloat16)
        fail<DTypeError>("lt::load_npy<lt::bfloat16>: ", path, " holds ", h.dtype, " values (descr '", h.descr,
                         "'), not float32: NumPy has no bfloat16, so a bfloat16 tensor loads from a float32 file (rounded); "
                         "load it with lt::load_npy<", cpp_type_of(h.dtype), "> and convert with lt::cast<lt::bfloat16>");
    if (h.dtype != expected)
        fail<DTypeError>("lt::load_npy<", cpp_type_of(expected), ">: ", path, " holds ", h.dtype, " values (descr '",
                         h.descr, "'), not ", expected, "; load it with lt::load_npy<", cpp_type_of(h.dtype), "> ",
                         is_complex(h.dtype) && !is_complex(expected)
                             ? std::string("(and take its real() or abs() if needed)")
                             : concat("(and convert with lt::cast<", cpp_type_of(expected), "> if needed)"));

    // A complex array is read as interleaved (re, im) pairs of its real type: shape [..., 2].
    const bool complex = is_complex(h.dtype);
    const DType stored = !complex ? h.dtype : h.dtype == DType::Complex64 ? DType::Float32 : DType::Float64;
    Shape shape = h.shape;
    if (complex) shape.push_back(2);
    BufferPtr buffer = allocate_buffer(device, stored, lazytensor::numel(shape));
    const std::size_t item = dtype_size(stored);
    std::vector<unsigned char> piece(std::min(h.data_bytes, piece_bytes));
    for (std::size_t at = 0; at < h.data_bytes; at += piece.size()) {
        const std::size_t n = std::min(piece.size(), h.data_bytes - at);
        if (std::fread(piece.data(), 1, n, file.get()) != n) {
            if (std::ferror(file.get())) bad_file(path, concat("cannot read the file: ", std::strerror(errno)));
            bad_file(path, "the file is truncated: it became shorter while it was read");
        }
        if (h.swap) swap_bytes(piece.data(), n, item);
        if (h.dtype == DType::Bool)  // any non-zero byte is true; a bool holds only 0 or 1
            for (std::size_t i = 0; i < n; ++i) piece[i] = piece[i] != 0;
        write_buffer(*buffer, at, piece.data(), n);
    }
    Strides strides = contiguous_strides(shape);
    if (h.fortran_order) {
        std::int64_t s = complex ? 2 : 1;
        for (std::size_t k = 0; k < h.shape.size(); ++k) {
            strides[k] = s;
            s *= h.shape[k];
        }
    }
    NodePtr node = graph::buffer(std::move(buffer), shape, std::move(strides), 0);
    if (!is_contiguous_layout(node->shape, node->strides, 0)) {
        node = graph::copy(node);
        realize_nodes({node.get()});
    }
    return node;
}

/// The preamble and header NumPy 1.24 writes for a C-order array: the dictionary with its
/// keys sorted, room for the first extent to grow to 21 digits, spaces and a newline up to a
/// multiple of 64 bytes; version 1.0, or 2.0 when the header needs more than 65535 bytes.
inline std::string header_bytes(DType dtype, const Shape& shape) {
    std::string dict = std::string("{'descr': '") + descr_of(dtype) + "', 'fortran_order': False, 'shape': (";
    for (std::size_t k = 0; k < shape.size(); ++k) dict += (k ? ", " : "") + std::to_string(shape[k]);
    dict += shape.size() == 1 ? ",), }" : "), }";
    if (!shape.empty()) dict.append(21 - std::min<std::size_t>(21, std::to_string(shape[0]).size()), ' ');
    const std::size_t text = dict.size() + 1;  // with the final newline
    int major = 1;
    std::size_t prefix = magic_size + 2 + 2;
    std::size_t padding = 64 - (prefix + text) % 64;
    if (text + padding > 65535) {
        major = 2;
        prefix = magic_size + 2 + 4;
        padding = 64 - (prefix + text) % 64;
    }
    const std::size_t length = text + padding;
    std::string out(magic, magic_size);
    out += static_cast<char>(major);
    out += '\0';
    for (std::size_t i = 0; i < prefix - magic_size - 2; ++i) out += static_cast<char>((length >> (8 * i)) & 0xff);
    out += dict;
    out.append(padding, ' ');
    out += '\n';
    return out;
}

/// Where save_npy writes: a new file beside the target (with the old file's permissions),
/// renamed over it once complete, so a save that fails leaves the old file (or none). A target
/// that exists and is not a regular file (a device such as /dev/null, a pipe) is written in
/// place. A symbolic link is followed.
class OutputFile {
public:
    explicit OutputFile(const std::string& path) : path_(path) {
        namespace fs = std::filesystem;
        std::error_code ec;
        fs::path target = path;
        if (fs::is_symlink(target, ec)) {
            const fs::path resolved = fs::weakly_canonical(target, ec);
            if (!ec) target = resolved;
        }
        const fs::file_status status = fs::status(target, ec);
        in_place_ = fs::exists(status) && !fs::is_regular_file(status);
        target_ = target.string();
        if (in_place_) {
            written_ = target_;
            file_ = std::fopen(written_.c_str(), "wb");
        } else {
            // A name no other writer uses ("x": never take over a file that exists).
            static std::atomic<std::uint64_t> saves{0};
            std::mt19937_64 rng(static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                                std::hash<std::thread::id>{}(std::this_thread::get_id()) ^ saves++);
            for (int attempt = 0; attempt < 16 && !file_; ++attempt) {
                written_ = target_ + ".tmp" + std::to_string(rng());
                file_ = std::fopen(written_.c_str(), "wbx");
                if (!file_ && errno != EEXIST) break;
            }
            created_ = file_ != nullptr;
            // The replacement keeps the permissions of the file it replaces.
            if (created_ && fs::is_regular_file(status)) fs::permissions(written_, status.permissions(), ec);
        }
        if (!file_) failed("cannot create the file");
    }
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;
    ~OutputFile() {
        if (file_) std::fclose(file_);
        std::error_code ec;
        if (!done_ && created_) std::filesystem::remove(written_, ec);
    }

    void write(const void* data, std::size_t bytes) {
        if (bytes && std::fwrite(data, 1, bytes, file_) != bytes) failed("cannot write the file");
    }
    /// Flushes and closes the file, then puts it in place.
    void commit() {
        if (std::fflush(file_) != 0) failed("cannot write the file");
        std::FILE* f = file_;
        file_ = nullptr;
        if (std::fclose(f) != 0) failed("cannot write the file");
        if (!in_place_) {
            std::error_code ec;
            std::filesystem::rename(written_, target_, ec);
            if (ec) fail<FileError>("lt::save_npy: ", path_, ": cannot replace the file: ", ec.message());
        }
        done_ = true;
    }

private:
    [[noreturn]] void failed(const char* what) {
        const int error = errno;
        fail<FileError>("lt::save_npy: ", path_, ": ", what, ": ", std::strerror(error));
    }

    std::string path_, target_, written_;
    bool in_place_ = false;
    bool created_ = false;  // a temporary file of ours exists
    bool done_ = false;
    std::FILE* file_ = nullptr;
};

/// Writes a realized row-major node (any offset) to `path`, a piece at a time, as an array of
/// `dtype` and `shape` (a complex array: the node holds its interleaved pairs, [shape..., 2]).
inline void save(const std::string& path, const Node& node, DType dtype, const Shape& shape) {
    const std::string header = header_bytes(dtype, shape);
    const std::size_t item = dtype_size(node.dtype);
    const std::size_t bytes = static_cast<std::size_t>(lazytensor::numel(node.shape)) * item;
    OutputFile out(path);
    out.write(header.data(), header.size());
    std::vector<unsigned char> piece(std::min(bytes, piece_bytes));
    const std::size_t start = static_cast<std::size_t>(node.offset) * item;
    for (std::size_t at = 0; at < bytes; at += piece.size()) {
        const std::size_t n = std::min(piece.size(), bytes - at);
        download(*node.buffer, start + at, piece.data(), n);
        if (!little_endian_host()) swap_bytes(piece.data(), n, item);
        out.write(piece.data(), n);
    }
    out.commit();
}

}  // namespace detail::npy

/// Writes x (a tensor or expression; realized first) to `path` as a .npy file: NumPy's format
/// version 1.0 (2.0 if the header needs more than 65535 bytes), C order, little-endian, descr
/// |b1, |u1, |i1, <i2, <u2, <i4, <u4, <i8, <u8, <f2, <f4 or <f8. A view that is not row-major
/// is copied on its device first. The file is written under a temporary name beside `path` and
/// renamed into place, so a save that fails leaves what was there before. FileError naming the
/// file if it cannot be written (a missing directory, a full disk). DTypeError for bfloat16,
/// which NumPy has no dtype for: save lt::cast<float>(x) instead (exact; load_npy<lt::bfloat16>
/// reads that file back to the same values).
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
void save_npy(const std::string& path, const E& x) {
    using T = typename E::value_type;
    if constexpr (std::is_same_v<T, bfloat16>) {
        detail::fail<DTypeError>("lt::save_npy: ", path, ": NumPy has no bfloat16 dtype (tensor of shape ", x.shape(),
                                 "); cast to float32 first (exact): lt::save_npy(path, lt::cast<float>(x))");
    } else {
        Tensor<T> t = x.realize();
        Tensor<T> data = contiguous(t);
        data.realize();
        detail::npy::save(path, *data.node_ptr(), data.node_ptr()->dtype, data.shape());
    }
}

/// The array in the .npy file at `path`, as a tensor on `device` (read a piece at a time, copied
/// there now). Reads versions 1.0, 2.0 and 3.0, C and Fortran order (a Fortran-order file gives
/// the same row-major tensor), either byte order. The file's dtype must be T's: DTypeError
/// naming both otherwise (nothing is converted; load the file's dtype and lt::cast it), and
/// for dtypes lazytensor does not have (strings, structured, longdouble, ...). A complex file
/// (<c8, <c16) loads as lt::load_npy<std::complex<float>> (or std::complex<double>). NumPy has no bfloat16:
/// load_npy<lt::bfloat16> reads a float32 file (<f4) and rounds each value to nearest even
/// (DTypeError for any other dtype). FileError naming
/// the file and the problem for a file that is missing, unreadable, truncated, not a
/// .npy file, of another version, with a malformed header, or with bytes after its data.
template <class T>
Tensor<T> load_npy(const std::string& path, Device device = default_device()) {
    if constexpr (detail::is_complex_element_v<T>) {
        using R = typename T::value_type;
        return Tensor<T>::from_interleaved(Tensor<R>(detail::npy::load(path, device, detail::complex_dtype_of<R>())));
    } else {
        return Tensor<T>(detail::npy::load(path, device, dtype_of<T>()));
    }
}

/// Writes a complex tensor as a .npy file of descr <c8 (complex64) or <c16 (complex128), as
/// save_npy writes real ones.
template <class R>
void save_npy(const std::string& path, const Tensor<std::complex<R>>& z) {
    Tensor<R> pairs = contiguous(z.interleaved());
    pairs.realize();
    detail::npy::save(path, *pairs.node_ptr(), z.dtype(), z.shape());
}

}  // namespace lazytensor
