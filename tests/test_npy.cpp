// SPDX-License-Identifier: MIT
// .npy files (save_npy, load_npy) and printing (operator<<, set_print_options).
//
// The .npy files under tests/fixtures were written by NumPy (tests/fixtures/make_npy_fixtures.py,
// which says how each array's values are computed; the expected values here compute the same
// formulas again). CI has no NumPy: only the committed files are read.
#include <csignal>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#if defined(__unix__)
#include <sys/resource.h>
#endif

#include "common.hpp"

#ifndef LAZYTENSOR_TEST_FIXTURES
#error "tests/CMakeLists.txt defines LAZYTENSOR_TEST_FIXTURES, the directory of the .npy fixtures"
#endif

namespace {

std::string npy_fixture(const std::string& name) { return std::string(LAZYTENSOR_TEST_FIXTURES) + "/" + name; }

std::string npy_read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void npy_write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out.good());
}

/// A fresh directory for one test's files, removed with everything in it at the end.
class NpyTempDir {
public:
    /// In `base`, or the system's temporary directory.
    explicit NpyTempDir(std::filesystem::path base = std::filesystem::temp_directory_path()) {
        std::mt19937_64 rng(std::random_device{}());
        path_ = base / ("lazytensor_test_npy_" + std::to_string(rng()));
        std::filesystem::create_directories(path_);
    }
    NpyTempDir(const NpyTempDir&) = delete;
    NpyTempDir& operator=(const NpyTempDir&) = delete;
    ~NpyTempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    std::string file(const std::string& name) const { return (path_ / name).string(); }
    /// The names of the files in the directory.
    std::vector<std::string> names() const {
        std::vector<std::string> out;
        for (const auto& entry : std::filesystem::directory_iterator(path_)) out.push_back(entry.path().filename().string());
        return out;
    }

private:
    std::filesystem::path path_;
};

/// A .npy file as NumPy lays it out: magic, version, header length, `dict` padded with spaces
/// and a newline to a multiple of 64 bytes, then `data`.
std::string npy_file(const std::string& dict, const std::string& data, int major = 1) {
    const std::size_t prefix = major == 1 ? 10 : 12;
    std::string header = dict;
    while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
    for (std::size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
    return out + header + data;
}

/// The bytes of `values`, as stored in memory (little-endian on the test machines).
template <class T>
std::string npy_raw(const std::vector<T>& values) {
    std::string out;
    for (const T& v : values) out.append(reinterpret_cast<const char*>(&v), sizeof(T));
    return out;
}

/// The element's value from its row-major index, for a fixture made by make_npy_fixtures.py.
template <class T>
std::vector<T> npy_values(std::int64_t n, const std::function<double(std::int64_t)>& f) {
    std::vector<T> out;
    for (std::int64_t i = 0; i < n; ++i) out.push_back(static_cast<T>(f(i)));
    return out;
}

/// Checks a loaded tensor: its device, shape and exact values.
template <class T>
void npy_check(const lt::Tensor<T>& t, lt::Device device, const lt::Shape& shape, const std::vector<T>& expected) {
    CHECK(t.device() == device);
    REQUIRE(t.shape() == shape);
    const std::vector<T> got = t.to_vector();
    REQUIRE(got.size() == expected.size());
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const T g = got[i], e = expected[i];
        if (std::memcmp(&g, &e, sizeof(T)) == 0) continue;  // bitwise: -0.0 and NaN too
        if (wrong++ < 5) FAIL_CHECK("element " << i << ": got " << +g << ", expected " << +e);
    }
    CHECK(wrong == 0);
}

}  // namespace

// ------------------------------------------------------------------------------- reading NumPy's

TEST_CASE("load_npy reads NumPy's files of every dtype") {
    for_each_device([](lt::Device d) {
        npy_check(lt::load_npy<bool>(npy_fixture("bool_2x3.npy")), d, {2, 3},
                  {true, false, false, true, false, false});
        npy_check(lt::load_npy<uint8_t>(npy_fixture("uint8_4x5.npy")), d, {4, 5},
                  npy_values<uint8_t>(20, [](std::int64_t i) { return double((i * 37) % 256); }));
        npy_check(lt::load_npy<int32_t>(npy_fixture("int32_3x4.npy")), d, {3, 4},
                  npy_values<int32_t>(12, [](std::int64_t i) { return double(i * 1000 - 7000); }));
        std::vector<int64_t> i64;
        for (int64_t i = 0; i < 6; ++i) i64.push_back((i - 3) * (int64_t(1) << 40) + i);
        npy_check(lt::load_npy<int64_t>(npy_fixture("int64_6.npy")), d, {6}, i64);
        npy_check(lt::load_npy<lt::half>(npy_fixture("float16_2x4.npy")), d, {2, 4},
                  npy_values<lt::half>(8, [](std::int64_t i) { return (double(i) - 4) * 0.25; }));
        npy_check(lt::load_npy<float>(npy_fixture("float32_2x3x4.npy")), d, {2, 3, 4},
                  npy_values<float>(24, [](std::int64_t i) { return double(i) * 0.5 - 1.25; }));
        npy_check(lt::load_npy<double>(npy_fixture("float64_5.npy")), d, {5},
                  npy_values<double>(5, [](std::int64_t i) { return 1.0 / double(i + 1); }));
        // On another device than the default one.
        npy_check(lt::load_npy<float>(npy_fixture("float32_0d.npy"), lt::Device::host()), lt::Device::host(), {}, {3.5f});
    });
}

TEST_CASE("load_npy reads Fortran order, big-endian data, 0-d and zero-size arrays, versions 2.0 and 3.0") {
    for_each_device([](lt::Device d) {
        // Fortran order: the same row-major tensor as the C-order array, in memory of its own.
        lt::Tensor<float> f = lt::load_npy<float>(npy_fixture("fortran_float32_2x3x4.npy"));
        npy_check(f, d, {2, 3, 4}, npy_values<float>(24, [](std::int64_t i) {
                      return double(100 * (i / 12) + 10 * (i / 4 % 3) + i % 4);
                  }));
        CHECK(f.is_realized());
        CHECK(f.node_ptr()->strides == lt::Strides{12, 4, 1});
        npy_check(lt::load_npy<int64_t>(npy_fixture("fortran_int64_3x5.npy")), d, {3, 5},
                  npy_values<int64_t>(15, [](std::int64_t i) { return double((i / 5) * (int64_t(1) << 33) - i % 5); }));
        // Big-endian.
        npy_check(lt::load_npy<double>(npy_fixture("big_float64_3x4.npy")), d, {3, 4},
                  npy_values<double>(12, [](std::int64_t i) { return double(i) * 1.5 - 3; }));
        npy_check(lt::load_npy<int32_t>(npy_fixture("big_int32_2x3.npy")), d, {2, 3},
                  npy_values<int32_t>(6, [](std::int64_t i) { return double(i * 0x01020304 - 5); }));
        npy_check(lt::load_npy<lt::half>(npy_fixture("big_float16_4.npy")), d, {4},
                  npy_values<lt::half>(4, [](std::int64_t i) { return (double(i) - 2) * 0.5; }));
        npy_check(lt::load_npy<float>(npy_fixture("big_fortran_float32_2x3.npy")), d, {2, 3},
                  npy_values<float>(6, [](std::int64_t i) { return double(i / 3) + 0.25 * double(i % 3); }));
        // 0-d and zero-size.
        npy_check(lt::load_npy<float>(npy_fixture("float32_0d.npy")), d, {}, {3.5f});
        npy_check(lt::load_npy<int32_t>(npy_fixture("int32_0x3.npy")), d, {0, 3}, {});
        // Versions 2.0 and 3.0.
        npy_check(lt::load_npy<float>(npy_fixture("v2_float32_5.npy")), d, {5},
                  npy_values<float>(5, [](std::int64_t i) { return 2.0 * double(i); }));
        npy_check(lt::load_npy<int64_t>(npy_fixture("v3_int64_4.npy")), d, {4},
                  npy_values<int64_t>(4, [](std::int64_t i) { return double(i - 2); }));
    });
}

TEST_CASE("load_npy reads headers written by hand: quotes, spacing, key order, Python 2 extents, native byte order") {
    NpyTempDir dir;
    const std::string path = dir.file("hand.npy");
    const std::string data = npy_raw<float>({1, 2, 3, 4, 5, 6});
    for (const std::string dict : {
             "{'shape': (3, 2), 'fortran_order': False, 'descr': '<f4'}",
             "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (3,2,)}",
             "{ 'descr' : '=f4' ,\n'fortran_order':False,'shape':( 3 , 2 ) , }",
             "{'descr': '|f4', 'fortran_order': False, 'shape': (3L, 2L), }",
             "{'descr': 'f4', 'fortran_order': False, 'shape': (3, 2), }",
         }) {
        INFO(dict);
        npy_write_bytes(path, npy_file(dict, data));
        for_each_device([&](lt::Device d) { npy_check(lt::load_npy<float>(path), d, {3, 2}, {1, 2, 3, 4, 5, 6}); });
    }
    // A bool file whose bytes are not all 0 or 1: any non-zero byte is true.
    npy_write_bytes(path, npy_file("{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }", std::string("\0\1\2\xff", 4)));
    for_each_device([&](lt::Device d) {
        lt::Tensor<bool> b = lt::load_npy<bool>(path);
        npy_check(b, d, {4}, {false, true, true, true});
        CHECK(lt::cast<int32_t>(b).to_vector() == std::vector<int32_t>{0, 1, 1, 1});
        CHECK((!b).to_vector() == std::vector<bool>{true, false, false, false});
    });
}

TEST_CASE("load_npy and save_npy read and write NumPy's complex files") {
    // The fixtures' complex values (make_npy_fixtures.py): [i] = (0.5 i - 1) + (2 - 0.25 i) j.
    std::vector<std::complex<double>> want;
    for (int i = 0; i < 6; ++i) want.emplace_back(0.5 * i - 1, 2 - 0.25 * i);
    NpyTempDir dir;
    const std::string path = dir.file("complex.npy");
    for_each_device([&](lt::Device d) {
        const auto z128 = lt::load_npy<std::complex<double>>(npy_fixture("complex128_2x3.npy"));
        CHECK(z128.dtype() == lt::DType::Complex128);
        CHECK(z128.shape() == lt::Shape{2, 3});
        CHECK(z128.device() == d);
        CHECK(z128.to_vector() == want);
        for (const char* name : {"big_complex64_2x3.npy", "fortran_complex64_2x3.npy"}) {
            INFO(name);
            const auto z64 = lt::load_npy<std::complex<float>>(npy_fixture(name));
            CHECK(z64.shape() == lt::Shape{2, 3});
            const std::vector<std::complex<float>> got = z64.to_vector();
            REQUIRE(got.size() == 6);
            for (std::size_t i = 0; i < 6; ++i) CHECK(got[i] == std::complex<float>(want[i]));
        }
        CHECK(lt::load_npy<std::complex<float>>(npy_fixture("complex64_2.npy")).to_vector() ==
              std::vector<std::complex<float>>{{1, 2}, {3, -4}});
        // Writing: NumPy's bytes, from a tensor built from planes (interleaved by a kernel) and
        // from a transposed view of one.
        lt::save_npy(path, lt::complex(lt::tensor<double>({-1, -0.5, 0, 0.5, 1, 1.5}, {2, 3}),
                                       lt::tensor<double>({2, 1.75, 1.5, 1.25, 1, 0.75}, {2, 3})));
        CHECK(npy_read_bytes(path) == npy_read_bytes(npy_fixture("complex128_2x3.npy")));
        lt::save_npy(path, lt::tensor<std::complex<float>>({{1, 2}, {3, -4}}, {2}));
        CHECK(npy_read_bytes(path) == npy_read_bytes(npy_fixture("complex64_2.npy")));
        const auto zt = lt::tensor<std::complex<double>>(want, {3, 2}).t();  // [2, 3] view
        lt::save_npy(path, zt);
        const auto back = lt::load_npy<std::complex<double>>(path);
        CHECK(back.shape() == lt::Shape{2, 3});
        CHECK(back.to_vector() == std::vector<std::complex<double>>{want[0], want[2], want[4], want[1], want[3], want[5]});
    });
}

// --------------------------------------------------------------------------------------- writing

TEST_CASE("save_npy writes what NumPy writes, byte for byte") {
    NpyTempDir dir;
    const std::string path = dir.file("out.npy");
    for_each_device([&](lt::Device) {
        const auto same_as = [&](const std::string& fixture, const auto& tensor) {
            INFO(fixture);
            lt::save_npy(path, tensor);
            CHECK(npy_read_bytes(path) == npy_read_bytes(npy_fixture(fixture)));
        };
        same_as("bool_2x3.npy", lt::tensor<bool>({true, false, false, true, false, false}, {2, 3}));
        same_as("uint8_4x5.npy", lt::tensor<uint8_t>(npy_values<uint8_t>(20, [](std::int64_t i) { return double((i * 37) % 256); }), {4, 5}));
        same_as("int32_3x4.npy", lt::tensor<int32_t>(npy_values<int32_t>(12, [](std::int64_t i) { return double(i * 1000 - 7000); }), {3, 4}));
        std::vector<int64_t> i64;
        for (int64_t i = 0; i < 6; ++i) i64.push_back((i - 3) * (int64_t(1) << 40) + i);
        same_as("int64_6.npy", lt::tensor<int64_t>(i64, {6}));
        same_as("float16_2x4.npy", lt::tensor<lt::half>(npy_values<lt::half>(8, [](std::int64_t i) { return (double(i) - 4) * 0.25; }), {2, 4}));
        same_as("float32_2x3x4.npy", lt::arange<float>(24).reshape({2, 3, 4}) * 0.5f - 1.25f);  // an expression
        same_as("float64_5.npy", lt::tensor<double>(npy_values<double>(5, [](std::int64_t i) { return 1.0 / double(i + 1); }), {5}));
        same_as("float32_0d.npy", lt::full<float>({}, 3.5f));
        same_as("int32_0x3.npy", lt::zeros<int32_t>({0, 3}));
        // A view that is not row-major (its memory holds the transpose): written row-major.
        lt::Tensor<float> memory = lt::contiguous((lt::arange<float>(24).reshape({2, 3, 4}) * 0.5f - 1.25f).permute({2, 1, 0}));
        memory.realize();
        same_as("float32_2x3x4.npy", memory.permute({2, 1, 0}));
    });
}

TEST_CASE("save_npy then load_npy gives back every dtype, views, 0-d and zero-size tensors") {
    NpyTempDir dir;
    const std::string path = dir.file("round.npy");
    for_each_device([&](lt::Device d) {
        const auto round_trip = [&](const auto& x) {
            using T = typename std::decay_t<decltype(x)>::value_type;
            lt::Tensor<T> t = x;
            lt::save_npy(path, t);
            npy_check(lt::load_npy<T>(path), d, t.shape(), t.to_vector());
        };
        const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
        round_trip(lt::tensor<bool>({true, false, true, true, false, false, true, false}, {2, 4}));
        round_trip(lt::tensor<uint8_t>({0, 1, 127, 128, 255, 7}, {3, 2}));
        round_trip(lt::tensor<int32_t>({std::numeric_limits<int32_t>::min(), -1, 0, 1, std::numeric_limits<int32_t>::max()}));
        round_trip(lt::tensor<int64_t>({std::numeric_limits<int64_t>::min(), -3, std::numeric_limits<int64_t>::max()}));
        round_trip(lt::tensor<lt::half>({lt::half(-0.0f), lt::half(65504.0f), lt::half(6e-8f), lt::half(inf), lt::half(nan)}));
        round_trip(lt::tensor<float>({-0.0f, 1e-45f, 3.4e38f, -inf, nan, 0.1f}, {2, 3}));
        round_trip(lt::tensor<double>({-0.0, 5e-324, 1.7e308, 0.1, double(nan), -double(inf)}, {3, 1, 2}));
        // Views of lazy and realized tensors: transposed, reversed with a step, broadcast, a slice
        // at an offset. The file holds their values row-major; the tensors are left as they were.
        lt::Tensor<float> lazy = lt::arange<float>(12).reshape({3, 4}) * 2.0f;
        round_trip(lazy.t());
        CHECK_FALSE(lazy.is_realized());
        lt::Tensor<int64_t> realized = lt::arange<int64_t>(20).reshape({4, 5});
        realized.realize();
        round_trip(realized.t());
        round_trip(realized.slice(1, {}, {}, -2));
        round_trip(realized.slice(0, 1, 3));
        round_trip(lt::tensor<lt::half>({lt::half(1.5f), lt::half(-2.0f)}).reshape({2, 1}).expand({2, 3}));
        round_trip(lt::tensor<bool>({true, false, true}).reshape({1, 3}).expand({2, 3}).t());
        CHECK(realized.node_ptr()->strides == lt::Strides{5, 1});
        // 0-d and zero-size.
        round_trip(lt::full<double>({}, -2.5));
        round_trip(lt::tensor<uint8_t>({9}).reshape({}));
        round_trip(lt::zeros<float>({0}));
        round_trip(lt::zeros<lt::half>({2, 0, 3}));
        round_trip(lt::ones<bool>({0, 5}));
    });
}

TEST_CASE("save_npy and load_npy move data larger than one piece of host memory, big-endian included") {
    // 6 MB of float64: more than the 4 MiB piece that goes through host memory at a time.
    NpyTempDir dir;
    const std::string path = dir.file("large.npy");
    const std::int64_t rows = 750, cols = 1000;
    std::vector<double> values(static_cast<std::size_t>(rows * cols));
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = double(i) * 0.25 - 7;
    std::string big_endian = npy_raw(values);
    for (std::size_t at = 0; at < big_endian.size(); at += 8) std::reverse(&big_endian[at], &big_endian[at] + 8);
    for_each_device([&](lt::Device d) {
        lt::Tensor<double> x = lt::tensor<double>(values, {rows, cols});
        lt::save_npy(path, x);
        npy_check(lt::load_npy<double>(path), d, {rows, cols}, values);
        npy_write_bytes(path, npy_file("{'descr': '>f8', 'fortran_order': False, 'shape': (750, 1000), }", big_endian));
        npy_check(lt::load_npy<double>(path), d, {rows, cols}, values);
        // A Fortran-order file of the transpose's memory: element [i, j] at i + rows * j.
        std::vector<double> column_major(values.size());
        for (std::int64_t i = 0; i < rows; ++i)
            for (std::int64_t j = 0; j < cols; ++j)
                column_major[static_cast<std::size_t>(i + rows * j)] = values[static_cast<std::size_t>(i * cols + j)];
        npy_write_bytes(path, npy_file("{'descr': '<f8', 'fortran_order': True, 'shape': (750, 1000), }", npy_raw(column_major)));
        npy_check(lt::load_npy<double>(path), d, {rows, cols}, values);
    });
}

TEST_CASE("save_npy writes format version 2.0 when the header needs more than 65535 bytes") {
    // 22000 axes of extent 1: "1, " each, a header of 66000 bytes. NumPy (at most 64 axes)
    // cannot read this one, but the layout is NumPy's.
    NpyTempDir dir;
    const std::string path = dir.file("v2.npy");
    const lt::Shape shape(22000, 1);
    for_each_device([&](lt::Device d) {
        lt::save_npy(path, lt::tensor<float>({2.5f}, shape));
        const std::string bytes = npy_read_bytes(path);
        REQUIRE(bytes.size() > 12);
        CHECK(bytes.substr(0, 8) == std::string("\x93NUMPY\x02\x00", 8));
        const std::size_t length = std::size_t(std::uint8_t(bytes[8])) | std::size_t(std::uint8_t(bytes[9])) << 8 |
                                   std::size_t(std::uint8_t(bytes[10])) << 16 | std::size_t(std::uint8_t(bytes[11])) << 24;
        CHECK(length > 65535);
        CHECK((12 + length) % 64 == 0);
        CHECK(bytes.size() == 12 + length + 4);
        CHECK(bytes[12 + length - 1] == '\n');
        npy_check(lt::load_npy<float>(path), d, shape, {2.5f});
    });
}

TEST_CASE("save_npy replaces a file only once the new one is complete, and reports failures naming the file") {
    NpyTempDir dir;
    const std::string path = dir.file("keep.npy");
    for_each_device([&](lt::Device d) {
        lt::save_npy(path, lt::tensor<int32_t>({1, 2, 3}));
        // Overwriting: the new contents replace the old, and no temporary file is left.
        lt::save_npy(path, lt::tensor<int32_t>({4, 5}));
        npy_check(lt::load_npy<int32_t>(path), d, {2}, {4, 5});
        CHECK(dir.names() == std::vector<std::string>{"keep.npy"});

        // The replacement keeps the old file's permissions.
        namespace fs = std::filesystem;
        fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
        lt::save_npy(path, lt::tensor<int32_t>({4, 5}));
        CHECK(fs::status(path).permissions() == (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));

        // A directory that does not exist; a directory where the file should be.
        const std::string missing = dir.file("no/such/dir/x.npy");
        std::string m = message_of<lt::FileError>([&] { lt::save_npy(missing, lt::tensor<int32_t>({1})); });
        CHECK(m == "lt::save_npy: " + missing + ": cannot create the file: No such file or directory");
        m = message_of<lt::FileError>([&] { lt::save_npy(dir.file(""), lt::tensor<int32_t>({1})); });
        CHECK(m.find("lt::save_npy: " + dir.file("")) == 0);
        CHECK(dir.names() == std::vector<std::string>{"keep.npy"});

        // A full disk: /dev/full takes no data (a device: written in place, not replaced).
        if (std::filesystem::exists("/dev/full")) {
            m = message_of<lt::FileError>([&] { lt::save_npy("/dev/full", lt::arange<float>(1000)); });
            CHECK(m == "lt::save_npy: /dev/full: cannot write the file: No space left on device");
            CHECK(std::filesystem::is_character_file("/dev/full"));
        }
        // A symbolic link: the file it points to is replaced, the link stays.
        std::filesystem::create_symlink(path, dir.file("link.npy"));
        lt::save_npy(dir.file("link.npy"), lt::tensor<int32_t>({6}));
        CHECK(std::filesystem::is_symlink(dir.file("link.npy")));
        npy_check(lt::load_npy<int32_t>(path), d, {1}, {6});
        std::filesystem::remove(dir.file("link.npy"));
        lt::save_npy(path, lt::tensor<int32_t>({4, 5}));
    });

#if defined(__unix__)
    // A write that fails half-way (here: past a file size limit, as a full disk would) leaves the
    // old file as it was and no partial file. The tensor is computed before the limit is set.
    lt::Tensor<double> big = lt::arange<double>(100000);
    big.realize();
    rlimit before{};
    REQUIRE(getrlimit(RLIMIT_FSIZE, &before) == 0);
    rlimit limited = before;
    limited.rlim_cur = 64 * 1024;
    void (*old_handler)(int) = std::signal(SIGXFSZ, SIG_IGN);
    REQUIRE(setrlimit(RLIMIT_FSIZE, &limited) == 0);
    const std::string m = message_of<lt::FileError>([&] { lt::save_npy(path, big); });
    setrlimit(RLIMIT_FSIZE, &before);
    std::signal(SIGXFSZ, old_handler);
    CHECK(m == "lt::save_npy: " + path + ": cannot write the file: File too large");
    npy_check(lt::load_npy<int32_t>(path, lt::Device::host()), lt::Device::host(), {2}, {4, 5});
    CHECK(dir.names() == std::vector<std::string>{"keep.npy"});
#endif
}

// ------------------------------------------------------------------------------------ bad files

TEST_CASE("load_npy of another dtype than the file's, or of a dtype lazytensor does not have, is a DTypeError") {
    const std::string f32 = npy_fixture("float32_2x3x4.npy");
    std::string m = message_of<lt::DTypeError>([&] { lt::load_npy<double>(f32); });
    CHECK(m == "lt::load_npy<double>: " + f32 +
                   " holds float32 values (descr '<f4'), not float64; load it with lt::load_npy<float> (and convert "
                   "with lt::cast<double> if needed)");
    m = message_of<lt::DTypeError>([&] { lt::load_npy<lt::half>(npy_fixture("big_int32_2x3.npy")); });
    CHECK(m.find("holds int32 values (descr '>i4'), not float16; load it with lt::load_npy<int32_t>") != std::string::npos);
    m = message_of<lt::DTypeError>([&] { lt::load_npy<uint8_t>(npy_fixture("bool_2x3.npy")); });
    CHECK(m.find("lt::load_npy<uint8_t>: ") == 0);
    CHECK(m.find("holds bool values") != std::string::npos);

    const std::string c64 = npy_fixture("complex64_2.npy");
    m = message_of<lt::DTypeError>([&] { lt::load_npy<float>(c64); });
    CHECK(m == "lt::load_npy<float>: " + c64 +
                   " holds complex64 values (descr '<c8'), not float32; load it with lt::load_npy<std::complex<float>> "
                   "(and take its real() or abs() if needed)");
    m = message_of<lt::DTypeError>([&] { lt::load_npy<std::complex<double>>(c64); });
    CHECK(m.find("holds complex64 values (descr '<c8'), not complex128") != std::string::npos);
    CHECK(message_of<lt::DTypeError>([&] { lt::load_npy<int32_t>(npy_fixture("int16_3.npy")); })
              .find("holds int16 values (descr '<i2'), not int32; load it with lt::load_npy<int16_t>") != std::string::npos);
    CHECK(message_of<lt::DTypeError>([&] { lt::load_npy<int32_t>(npy_fixture("unicode_2.npy")); })
              .find("'<U3' (unicode strings)") != std::string::npos);
    m = message_of<lt::DTypeError>([&] { lt::load_npy<int32_t>(npy_fixture("structured_2.npy")); });
    CHECK(m.find("holds a structured dtype (fields [('a', '<i4'), ('b', '<f4')]") != std::string::npos);
}

TEST_CASE("bad .npy files are FileErrors naming the file and the problem") {
    NpyTempDir dir;
    const std::string path = dir.file("bad.npy");
    const std::string good_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    const std::string data = npy_raw<float>({1, 2, 3, 4, 5, 6});
    const auto dict_with = [&](const std::string& shape) {
        return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    };
    const std::string v1 = npy_file(good_dict, data);
    struct Case {
        std::string bytes, problem;
    };
    const std::vector<Case> cases = {
        {"", "not a .npy file: the file is empty"},
        {std::string("PK\x03\x04\x14\0\0\0\0\0", 10), "not a .npy file: it does not start with NumPy's magic string \\x93NUMPY"},
        {v1.substr(0, 4), "the file is truncated: it ends (after 4 bytes) inside the preamble"},
        {v1.substr(0, 9), "the file is truncated: it ends (after 9 bytes) inside the header length"},
        {v1.substr(0, 6) + "\x04" + v1.substr(7), "unsupported .npy format version 4.0 (lazytensor reads versions 1.0, 2.0 and 3.0)"},
        {v1.substr(0, 7) + "\x01" + v1.substr(8), "unsupported .npy format version 1.1"},
        {v1.substr(0, 8) + "\xff\xff" + v1.substr(10), "the file is truncated: its header is 65535 bytes long, but the file ends after 152 bytes"},
        {std::string("\x93NUMPY\x02\0\xff\xff\xff\xff", 12) + good_dict, "the file is truncated: its header is 4294967295 bytes long, but the file ends after"},
        {npy_file("[1, 2]", data), "the header is not a valid .npy header: expected '{' (a .npy header is a Python dictionary) (at byte 0 of the header [1, 2]"},
        {npy_file("{'descr': '<f4', 'fortran_order': False}", data), "the header has no 'shape' key: {'descr': '<f4', 'fortran_order': False}"},
        {npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}", data),
         "unexpected key 'x' (a .npy header has exactly the keys 'descr', 'fortran_order' and 'shape')"},
        {npy_file("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,)}", data), "the key 'descr' appears twice"},
        {npy_file(dict_with("[2, 3]"), data), "the shape must be a tuple such as (2, 3), (5,) or ()"},
        {npy_file(dict_with("(6)"), data), "a shape (n) without a comma is a number, not a tuple: write (n,)"},
        {npy_file(dict_with("(-1, 6)"), data), "negative extent -1 in the shape"},
        {npy_file(dict_with("(2, x)"), data), "expected a whole number in the shape"},
        {npy_file(dict_with("(99999999999999999999,)"), data), "an extent in the shape does not fit in 64 bits"},
        {npy_file(dict_with("(4294967296, 4294967296, 0)"), ""),
         "the header's shape [4294967296, 4294967296, 0] is too large: its extents multiply past 64 bits"},
        {npy_file(dict_with("(2 3)"), data), "expected ',' or ')' in the shape"},
        {npy_file("{'descr': '<f4', 'fortran_order': 'no', 'shape': (2, 3), }", data), "fortran_order must be True or False"},
        {npy_file("{'descr' '<f4', 'fortran_order': False, 'shape': (2, 3), }", data), "expected ':' after the key"},
        {npy_file("{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3), }", data), "expected ',' or '}' after a value"},
        {npy_file("{'descr': '<f4', 'fortran_order': False 'shape': (2, 3), }", data), "expected ',' or '}' after a value"},
        {npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } x", data), "unexpected text after the dictionary"},
        {npy_file("{'descr': '<f4", data), "a string is not closed"},
        {npy_file(good_dict, data.substr(0, 20)),
         "the file is truncated: shape [2, 3] of float32 needs 24 bytes of data, the file has 20 after its header"},
        {npy_file(good_dict, data + "junk"),
         "the file has 4 bytes after its data (shape [2, 3] of float32: 24 bytes); lazytensor does not load files with trailing bytes"},
        {npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\x01", data), "unexpected text after the dictionary (at byte 59 of the header {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\\x01)"},
    };
    for (const Case& c : cases) {
        INFO(c.problem);
        npy_write_bytes(path, c.bytes);
        const std::string m = message_of<lt::FileError>([&] { lt::load_npy<float>(path); });
        CHECK(m.find("lt::load_npy: " + path + ": ") == 0);
        CHECK(m.find(c.problem) != std::string::npos);
    }
    // The README's rows, whole.
    npy_write_bytes(path, npy_file(dict_with("(-1, 6)"), data));
    CHECK(message_of<lt::FileError>([&] { lt::load_npy<float>(path); }) ==
          "lt::load_npy: " + path + ": the header is not a valid .npy header: negative extent -1 in the shape (at byte 53 of "
          "the header {'descr': '<f4', 'fortran_order': False, 'shape': (-1, 6), })");
    npy_write_bytes(path, npy_file(good_dict, data.substr(0, 20)));
    CHECK(message_of<lt::FileError>([&] { lt::load_npy<float>(path); }) ==
          "lt::load_npy: " + path + ": the file is truncated: shape [2, 3] of float32 needs 24 bytes of data, the file has "
          "20 after its header");
    // No file, a directory.
    const std::string missing = dir.file("missing.npy");
    CHECK(message_of<lt::FileError>([&] { lt::load_npy<float>(missing); }) ==
          "lt::load_npy: " + missing + ": cannot open the file: No such file or directory");
    const std::string folder = dir.file("");
    CHECK(message_of<lt::FileError>([&] { lt::load_npy<float>(folder); }).find("lt::load_npy: " + folder + ": cannot") == 0);
    // Every error leaves the device's memory as it was.
    for_each_device([&](lt::Device d) {
        const std::size_t before = lt::memory_stats(d).live_bytes;
        npy_write_bytes(path, npy_file(good_dict, data + "junk"));
        CHECK_THROWS_AS(lt::load_npy<float>(path), lt::FileError);
        CHECK(lt::memory_stats(d).live_bytes == before);
    });
}

namespace {

template <class T>
void npy_try_load(const std::string& path) {
    const lt::Tensor<T> t = lt::load_npy<T>(path, lt::Device::host());
    const std::vector<T> values = t.to_vector();
    CHECK(static_cast<std::int64_t>(values.size()) == t.numel());
}

}  // namespace

TEST_CASE("mutated and truncated .npy files load or throw a lazytensor error, never crash") {
    // Valid files changed a few bytes at a time, mostly in the preamble and header: each must
    // load or throw lazytensor::Error (never another exception, a crash or, under the sanitizers,
    // undefined behaviour). Fixed seeds; on the host (the parser is the same for every device).
    // In memory where there is a tmpfs: rewriting one file 4000 times on a disk that discards
    // freed blocks takes seconds.
    std::error_code ec;
    NpyTempDir dir(std::filesystem::is_directory("/dev/shm", ec) ? "/dev/shm" : std::filesystem::temp_directory_path());
    const std::string path = dir.file("fuzz.npy");
    struct Base {
        std::string bytes;
        int dtype;  // index into the load functions below
    };
    std::vector<Base> bases;
    for (const auto& [name, dtype] : std::vector<std::pair<std::string, int>>{
             {"bool_2x3.npy", 0}, {"uint8_4x5.npy", 1}, {"int32_3x4.npy", 2}, {"big_int32_2x3.npy", 2},
             {"fortran_int64_3x5.npy", 3}, {"big_float16_4.npy", 4}, {"float32_2x3x4.npy", 5},
             {"fortran_float32_2x3x4.npy", 5}, {"float32_0d.npy", 5}, {"v2_float32_5.npy", 5},
             {"v3_int64_4.npy", 3}, {"int32_0x3.npy", 2}, {"float64_5.npy", 6}, {"structured_2.npy", 2}})
        bases.push_back({npy_read_bytes(npy_fixture(name)), dtype});
    const std::vector<void (*)(const std::string&)> loads = {
        npy_try_load<bool>, npy_try_load<uint8_t>, npy_try_load<int32_t>, npy_try_load<int64_t>,
        npy_try_load<lt::half>, npy_try_load<float>, npy_try_load<double>};
    static const char interesting_chars[] = "(),:'\"-0123456789Ll[]{} \n\t\x93\x00\xffTrueFalse<>|=bfiuc";
    const std::string interesting(interesting_chars, sizeof(interesting_chars) - 1);

    std::mt19937 gen(20261124);
    const auto below = [&](std::size_t n) { return n ? static_cast<std::size_t>(gen() % n) : 0; };
    int loaded = 0, rejected = 0;
    for (int trial = 0; trial < 4000; ++trial) {
        const Base& base = bases[below(bases.size())];
        std::string bytes = base.bytes;
        const std::size_t header_end = std::min<std::size_t>(bytes.size(), 200);  // the preamble and header, mostly
        for (std::size_t m = 0, count = 1 + below(3); m < count; ++m) {
            const std::size_t at = below(std::min(header_end, bytes.size() + 1));
            switch (below(7)) {
                case 0:
                    if (at < bytes.size()) bytes[at] = static_cast<char>(gen());
                    break;
                case 1:
                    if (at < bytes.size()) bytes[at] = interesting[below(interesting.size())];
                    break;
                case 2:
                    if (at < bytes.size()) bytes.erase(at, 1);
                    break;
                case 3: bytes.insert(at, 1, interesting[below(interesting.size())]); break;
                case 4: bytes.resize(below(bytes.size() + 1)); break;
                case 5:
                    if (bytes.size() > 12) bytes[below(12)] = static_cast<char>(gen());  // magic, version, length
                    break;
                default:
                    if (at < bytes.size()) bytes.insert(at, bytes.substr(at, below(8)));  // a repeated run
                    break;
            }
        }
        npy_write_bytes(path, bytes);
        const int dtype = below(4) == 0 ? static_cast<int>(below(loads.size())) : base.dtype;
        try {
            loads[static_cast<std::size_t>(dtype)](path);
            ++loaded;
        } catch (const lt::Error&) {
            ++rejected;
        } catch (const std::exception& e) {
            FAIL_CHECK("trial " << trial << ": not a lazytensor::Error: " << e.what());
        }
    }
    MESSAGE(loaded << " loaded, " << rejected << " rejected");
    CHECK(loaded > 50);
    CHECK(rejected > 1000);
}

// -------------------------------------------------------------------------------------- printing

namespace {

template <class E>
std::string npy_printed(const E& x) {
    std::ostringstream out;
    out << x;
    return out.str();
}

/// The print options for a scope, restored at its end (also when a check fails).
class NpyPrintOptions {
public:
    explicit NpyPrintOptions(const lt::PrintOptions& options) : before_(lt::print_options()) { lt::set_print_options(options); }
    NpyPrintOptions(const NpyPrintOptions&) = delete;
    NpyPrintOptions& operator=(const NpyPrintOptions&) = delete;
    ~NpyPrintOptions() { lt::set_print_options(before_); }

private:
    lt::PrintOptions before_;
};

}  // namespace

TEST_CASE("printing writes aligned columns, floats with 4 digits, and every dtype as expected") {
    for_each_device([](lt::Device d) {
        const std::string tail = ", device=" + d.str() + ")";
        const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
        CHECK(npy_printed(lt::tensor<float>({1.5f, -2.25f, 3, 100, 0.125f, -0.5f}, {2, 3})) ==
              "tensor([[  1.5000,  -2.2500,   3.0000],\n"
              "        [100.0000,   0.1250,  -0.5000]], shape=[2, 3], dtype=float32" + tail);
        CHECK(npy_printed(lt::tensor<int32_t>({-5, 0, 123, 7})) == "tensor([ -5,   0, 123,   7], shape=[4], dtype=int32" + tail);
        CHECK(npy_printed(lt::tensor<uint8_t>({0, 255, 7, 10}, {2, 2})) ==
              "tensor([[  0, 255],\n        [  7,  10]], shape=[2, 2], dtype=uint8" + tail);
        CHECK(npy_printed(lt::tensor<int64_t>({int64_t(1) << 40, -1})) ==
              "tensor([1099511627776,            -1], shape=[2], dtype=int64" + tail);
        CHECK(npy_printed(lt::tensor<bool>({true, false, true})) == "tensor([ true, false,  true], shape=[3], dtype=bool" + tail);
        CHECK(npy_printed(lt::tensor<lt::half>({lt::half(0.5f), lt::half(-1.25f), lt::half(2.0f)})) ==
              "tensor([ 0.5000, -1.2500,  2.0000], shape=[3], dtype=float16" + tail);
        // Whole numbers: "3." (the value is floating, all its digits shown).
        CHECK(npy_printed(lt::tensor<double>({1, -2, 300})) == "tensor([  1.,  -2., 300.], shape=[3], dtype=float64" + tail);
        CHECK(npy_printed(lt::tensor<float>({1, 2, 3, 4, 5, 6}, {2, 3})) ==
              "tensor([[1., 2., 3.],\n        [4., 5., 6.]], shape=[2, 3], dtype=float32" + tail);
        // 0-d, zero-size.
        CHECK(npy_printed(lt::full<float>({}, 2.5f)) == "tensor(2.5000, shape=[], dtype=float32" + tail);
        CHECK(npy_printed(lt::zeros<float>({0, 3})) == "tensor([], shape=[0, 3], dtype=float32" + tail);
        CHECK(npy_printed(lt::zeros<int32_t>({2, 0})) == "tensor([], shape=[2, 0], dtype=int32" + tail);
        // NaN (either sign) and infinities; all zeros.
        CHECK(npy_printed(lt::tensor<float>({nan, inf, -inf, 1.5f})) ==
              "tensor([   nan,    inf,   -inf, 1.5000], shape=[4], dtype=float32" + tail);
        CHECK(npy_printed(lt::tensor<float>({-nan, nan})) == "tensor([nan, nan], shape=[2], dtype=float32" + tail);
        CHECK(npy_printed(lt::zeros<double>({2})) == "tensor([0., 0.], shape=[2], dtype=float64" + tail);
        // Scientific notation: magnitudes below 1e-4, spanning more than 1000, or above 1e8.
        CHECK(npy_printed(lt::tensor<float>({1e-5f, 1.0f})) == "tensor([1.0000e-05, 1.0000e+00], shape=[2], dtype=float32" + tail);
        CHECK(npy_printed(lt::tensor<float>({1, -5000})) == "tensor([ 1.0000e+00, -5.0000e+03], shape=[2], dtype=float32" + tail);
        CHECK(npy_printed(lt::tensor<double>({1e9})) == "tensor([1.0000e+09], shape=[1], dtype=float64" + tail);
        // Three axes: a blank line between the blocks.
        CHECK(npy_printed(lt::arange<int32_t>(8).reshape({2, 2, 2})) ==
              "tensor([[[0, 1],\n"
              "         [2, 3]],\n"
              "\n"
              "        [[4, 5],\n"
              "         [6, 7]]], shape=[2, 2, 2], dtype=int32" + tail);
        // A long row wraps at 80 characters.
        CHECK(npy_printed(lt::arange<float>(20) * 0.5f) ==
              "tensor([0.0000, 0.5000, 1.0000, 1.5000, 2.0000, 2.5000, 3.0000, 3.5000, 4.0000,\n"
              "        4.5000, 5.0000, 5.5000, 6.0000, 6.5000, 7.0000, 7.5000, 8.0000, 8.5000,\n"
              "        9.0000, 9.5000], shape=[20], dtype=float32" + tail);
        // Printing a lazy tensor realizes it.
        lt::Tensor<int32_t> lazy = lt::arange<int32_t>(3) + 1;
        CHECK(npy_printed(lazy) == "tensor([1, 2, 3], shape=[3], dtype=int32" + tail);
        CHECK(lazy.is_realized());
    });
}

TEST_CASE("printing summarizes a large tensor and reads only the elements it shows") {
    for_each_device([](lt::Device d) {
        const std::string tail = ", device=" + d.str() + ")";
        CHECK(npy_printed(lt::arange<int32_t>(5000)) ==
              "tensor([   0,    1,    2, ..., 4997, 4998, 4999], shape=[5000], dtype=int32" + tail);
        lt::Tensor<int32_t> x = lt::arange<int32_t>(10000).reshape({100, 100});
        CHECK(npy_printed(x) ==
              "tensor([[   0,    1,    2, ...,   97,   98,   99],\n"
              "        [ 100,  101,  102, ...,  197,  198,  199],\n"
              "        [ 200,  201,  202, ...,  297,  298,  299],\n"
              "        ...,\n"
              "        [9700, 9701, 9702, ..., 9797, 9798, 9799],\n"
              "        [9800, 9801, 9802, ..., 9897, 9898, 9899],\n"
              "        [9900, 9901, 9902, ..., 9997, 9998, 9999]], shape=[100, 100], dtype=int32" + tail);
        // A transposed view of realized memory, read in place.
        CHECK(npy_printed(x.t()) ==
              "tensor([[   0,  100,  200, ..., 9700, 9800, 9900],\n"
              "        [   1,  101,  201, ..., 9701, 9801, 9901],\n"
              "        [   2,  102,  202, ..., 9702, 9802, 9902],\n"
              "        ...,\n"
              "        [  97,  197,  297, ..., 9797, 9897, 9997],\n"
              "        [  98,  198,  298, ..., 9798, 9898, 9998],\n"
              "        [  99,  199,  299, ..., 9799, 9899, 9999]], shape=[100, 100], dtype=int32" + tail);
    });
    // What printing reads from a buffer (no tensor needed): a few runs of the shown elements.
    const lt::PrintOptions defaults;
    const auto total = [](const std::vector<lt::detail::ReadRun>& runs) {
        std::int64_t n = 0;
        for (const auto& r : runs) n += r.count;
        return n;
    };
    const std::int64_t e8 = 100000000;
    auto runs = lt::detail::print_reads({e8}, {1}, 0, defaults);
    REQUIRE(runs.size() == 2);
    CHECK((runs[0].first == 0 && runs[0].count == 3 && runs[1].first == e8 - 3 && runs[1].count == 3));
    // [10^4, 10^4] row-major: rows 0-2 and 9997-9999, columns 0-2 and 9997-9999 (a row's last
    // three and the next row's first three are adjacent).
    runs = lt::detail::print_reads({10000, 10000}, {10000, 1}, 0, defaults);
    CHECK(total(runs) == 36);
    CHECK(runs.size() == 8);
    runs = lt::detail::print_reads({10000, 10000}, {1, 10000}, 0, defaults);  // its transpose
    CHECK(total(runs) == 36);
    runs = lt::detail::print_reads({100, 100, 100, 100}, {1000000, 10000, 100, 1}, 0, defaults);
    CHECK(total(runs) >= 6 * 6 * 6 * 6);
    CHECK(total(runs) <= 2 * 6 * 6 * 6 * 6);
    // A small strided view at an offset: one run from its first element to its last.
    runs = lt::detail::print_reads({3, 4}, {8, 2}, 5, defaults);
    REQUIRE(runs.size() == 1);
    CHECK((runs[0].first == 5 && runs[0].count == 2 * 8 + 3 * 2 + 1));
    CHECK(lt::detail::print_reads({0, 5}, {5, 1}, 0, defaults).empty());
}

TEST_CASE("set_print_options: precision, threshold, edgeitems and linewidth") {
    const lt::PrintOptions defaults = lt::print_options();
    CHECK(defaults.precision == 4);
    CHECK(defaults.threshold == 1000);
    CHECK(defaults.edgeitems == 3);
    CHECK(defaults.linewidth == 80);
    for_each_device([&](lt::Device d) {
        const std::string tail = ", device=" + d.str() + ")";
        {
            lt::PrintOptions options = lt::print_options();
            options.precision = 2;
            NpyPrintOptions scoped(options);
            CHECK(lt::print_options().precision == 2);
            CHECK(npy_printed(lt::tensor<float>({1.5f, -2.25f})) == "tensor([ 1.50, -2.25], shape=[2], dtype=float32" + tail);
            CHECK(npy_printed(lt::tensor<double>({1e-6, 1})) == "tensor([1.00e-06, 1.00e+00], shape=[2], dtype=float64" + tail);
        }
        CHECK(lt::print_options().precision == 4);
        {
            lt::PrintOptions options;
            options.threshold = 5;
            options.edgeitems = 2;
            NpyPrintOptions scoped(options);
            CHECK(npy_printed(lt::arange<int32_t>(10)) == "tensor([0, 1, ..., 8, 9], shape=[10], dtype=int32" + tail);
            CHECK(npy_printed(lt::arange<int32_t>(5)) == "tensor([0, 1, 2, 3, 4], shape=[5], dtype=int32" + tail);
        }
        {
            lt::PrintOptions options;
            options.threshold = 10;
            options.edgeitems = 1;
            NpyPrintOptions scoped(options);
            CHECK(npy_printed(lt::arange<int32_t>(27).reshape({3, 3, 3})) ==
                  "tensor([[[ 0, ...,  2],\n"
                  "         ...,\n"
                  "         [ 6, ...,  8]],\n"
                  "\n"
                  "        ...,\n"
                  "\n"
                  "        [[18, ..., 20],\n"
                  "         ...,\n"
                  "         [24, ..., 26]]], shape=[3, 3, 3], dtype=int32" + tail);
        }
        {
            lt::PrintOptions options;
            options.linewidth = 20;
            NpyPrintOptions scoped(options);
            CHECK(npy_printed(lt::arange<int32_t>(10)) ==
                  "tensor([0, 1, 2, 3,\n        4, 5, 6, 7,\n        8, 9], shape=[10], dtype=int32" + tail);
            options.linewidth = 1;  // one value a line
            lt::set_print_options(options);
            CHECK(npy_printed(lt::arange<int32_t>(3)) == "tensor([0,\n        1,\n        2], shape=[3], dtype=int32" + tail);
        }
        {
            lt::PrintOptions options;
            options.threshold = 0;  // always summarize; an axis of at most 2 * edgeitems stays whole
            options.edgeitems = std::numeric_limits<std::int64_t>::max();
            NpyPrintOptions scoped(options);
            CHECK(npy_printed(lt::arange<int32_t>(4)) == "tensor([0, 1, 2, 3], shape=[4], dtype=int32" + tail);
        }
    });
    {
        // The positional spelling: options left out keep their values.
        NpyPrintOptions scoped(lt::print_options());
        lt::set_print_options(2, 5, 1);
        CHECK(lt::print_options().linewidth == 80);
        CHECK(npy_printed(lt::tensor<float>({0.5f, 1, 2, 3, 4.25f}, lt::Device::host())) ==
              "tensor([0.50, 1.00, 2.00, 3.00, 4.25], shape=[5], dtype=float32, device=host)");
        CHECK(npy_printed(lt::arange<int32_t>(6, lt::Device::host())) == "tensor([0, ..., 5], shape=[6], dtype=int32, device=host)");
        lt::set_print_options(3);
        CHECK(lt::print_options().precision == 3);
        CHECK(lt::print_options().threshold == 5);
        CHECK(lt::print_options().edgeitems == 1);
        CHECK(message_of<lt::ValueError>([] { lt::set_print_options(2, -1); }) ==
              "lt::set_print_options: threshold must be >= 0, got -1");
        CHECK(lt::print_options().precision == 3);  // unchanged by the failed call
    }
    // Bad options are ValueErrors and change nothing.
    lt::PrintOptions bad;
    bad.precision = -1;
    CHECK(message_of<lt::ValueError>([&] { lt::set_print_options(bad); }) ==
          "lt::set_print_options: precision must be from 0 to 30 digits, got -1");
    bad = lt::PrintOptions{};
    bad.threshold = -5;
    CHECK(message_of<lt::ValueError>([&] { lt::set_print_options(bad); }) == "lt::set_print_options: threshold must be >= 0, got -5");
    bad = lt::PrintOptions{};
    bad.edgeitems = 0;
    CHECK(message_of<lt::ValueError>([&] { lt::set_print_options(bad); }) == "lt::set_print_options: edgeitems must be >= 1, got 0");
    bad = lt::PrintOptions{};
    bad.linewidth = 0;
    CHECK(message_of<lt::ValueError>([&] { lt::set_print_options(bad); }) == "lt::set_print_options: linewidth must be >= 1, got 0");
    CHECK(lt::print_options().precision == 4);
    CHECK(lt::print_options().linewidth == 80);
}

TEST_CASE("the README's .npy and print options examples") {
    NpyTempDir dir;
    const std::string path = dir.file("x.npy");
    for_each_device([&](lt::Device d) {
        lt::Tensor<float> x = lt::arange<float>(6).reshape({2, 3});
        lt::save_npy(path, x.t());                             // C order, little-endian, as np.save writes it
        lt::Tensor<float> y = lt::load_npy<float>(path);       // shape [3, 2], on the default device
        lt::Tensor<double> z = lt::cast<double>(lt::load_npy<float>(path));  // another dtype: load, then cast
        npy_check(y, d, {3, 2}, {0, 3, 1, 4, 2, 5});
        CHECK(z.to_vector() == std::vector<double>{0, 3, 1, 4, 2, 5});

        const lt::PrintOptions saved = lt::print_options();
        lt::PrintOptions options = lt::print_options();
        options.precision = 2;
        lt::set_print_options(options);
        std::ostringstream out;
        out << lt::tensor<float>({1.5f, -2.25f}, lt::Device::host());  // tensor([ 1.50, -2.25], shape=[2], dtype=float32, device=host)
        lt::set_print_options(saved);
        CHECK(out.str() == "tensor([ 1.50, -2.25], shape=[2], dtype=float32, device=host)");
    });
}
