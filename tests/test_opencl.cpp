// SPDX-License-Identifier: MIT
// The OpenCL backend's own behaviour: device listing and moves, mixed-device errors, the disk
// cache of program binaries, build errors, debug output, and failures that leave tensors usable.
// (Every other test program also runs on OpenCL: see tests/CMakeLists.txt.)
#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>
#include <fstream>
#include <iostream>
#include <limits>
#include <random>
#include <regex>
#include <sstream>

#include "common.hpp"
#include <lazytensor/interop/opencl.hpp>

namespace fs = std::filesystem;

namespace {

/// The OpenCL devices under test (LAZYTENSOR_TEST_DEVICES, else every OpenCL device).
std::vector<lt::Device> opencl_devices() {
    std::vector<lt::Device> out;
    for (lt::Device d : test_devices())
        if (d.kind == lt::Device::Kind::OpenCL) out.push_back(d);
    if (out.empty()) {
        for (const auto& info : lt::devices())
            if (info.device.kind == lt::Device::Kind::OpenCL) out.push_back(info.device);
    }
    if (out.empty()) FAIL("no OpenCL device found: install an OpenCL driver (on Debian: apt-get install pocl-opencl-icd)");
    return out;
}

lt::detail::opencl::OpenCLBackend& backend_of(lt::Device d) { return lt::detail::opencl::opencl_backend(d.index); }

/// A fresh, empty directory under the system temp dir, removed at scope exit.
struct TempDir {
    fs::path path;
    TempDir() {
        std::random_device rd;
        path = fs::temp_directory_path() / ("lazytensor-test-" + std::to_string(rd()) + std::to_string(rd()));
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

/// Points a disk cache at `dir` for a scope; the previous directory comes back even when a
/// check fails half-way.
struct UsingCacheDir {
    lt::detail::opencl::ProgramDiskCache& disk;
    std::string saved;
    UsingCacheDir(lt::detail::opencl::ProgramDiskCache& d, const fs::path& dir) : disk(d), saved(d.directory()) {
        disk.set_directory(dir.string());
    }
    ~UsingCacheDir() { disk.set_directory(saved); }
};

/// Source no other test builds, so that the in-memory and disk caches start cold for it.
std::string unique_source() {
    static std::random_device rd;
    return "// " + std::to_string(rd()) + std::to_string(rd()) +
           "\n__kernel void probe(__global float* x) { x[get_global_id(0)] *= 2.0f; }\n";
}

/// Captures what lazytensor writes to std::cerr.
struct CaptureCerr {
    std::ostringstream text;
    std::streambuf* old;
    CaptureCerr() : old(std::cerr.rdbuf(text.rdbuf())) {}
    ~CaptureCerr() { std::cerr.rdbuf(old); }
};

}  // namespace

TEST_CASE("lt::devices lists the host first, then every OpenCL device with its kind") {
    const auto list = lt::devices();
    REQUIRE(!list.empty());
    CHECK(list[0].device == lt::Device::host());
    CHECK(list[0].kind == "host");
    int index = 0;
    for (std::size_t i = 1; i < list.size(); ++i) {
        CHECK(list[i].device == lt::Device::opencl(index++));
        CHECK(!list[i].name.empty());
        CHECK((list[i].kind == "gpu" || list[i].kind == "cpu" || list[i].kind == "accelerator"));
        // The largest buffer is the device's own CL_DEVICE_MAX_MEM_ALLOC_SIZE, and one byte more
        // cannot be allocated.
        cl_ulong max_alloc = 0;
        REQUIRE(clGetDeviceInfo(backend_of(list[i].device).device_id(), CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc,
                                &max_alloc, nullptr) == CL_SUCCESS);
        CHECK(list[i].largest_buffer == max_alloc);
        const std::string too_large = "the device's largest buffer is " + std::to_string(max_alloc) + " bytes";
        CHECK_THROWS_WITH_AS(lt::zeros<std::uint8_t>({static_cast<std::int64_t>(max_alloc) + 1}, list[i].device).realize(),
                             doctest::Contains(too_large.c_str()), lt::BackendError);
    }
    CHECK(list[0].largest_buffer >= (std::size_t(1) << 40));
    for (lt::Device d : opencl_devices()) CHECK(d.index < index);

    // A device that does not exist is an error naming it and what there is.
    try {
        lt::set_default_device(lt::Device::opencl(97));
        FAIL("expected a DeviceError");
    } catch (const lt::DeviceError& e) {
        CHECK(std::string(e.what()).find("opencl:97") != std::string::npos);
        CHECK(std::string(e.what()).find("OpenCL device") != std::string::npos);
    }
    CHECK_THROWS_AS(lt::tensor<float>({1.0f}).to(lt::Device::opencl(97)), lt::DeviceError);
    CHECK(lt::detail::parse_device("opencl:3") == lt::Device::opencl(3));
    CHECK(lt::detail::parse_device("opencl") == lt::Device::opencl(0));
    CHECK_THROWS_AS(lt::detail::parse_device("cuda"), lt::DeviceError);
}

TEST_CASE("tensors move between devices with .to() and come back unchanged") {
    for (lt::Device d : opencl_devices()) {
        INFO("device: " << d.str());
        const Ref r = random_ref<float>({5, 7}, 11);
        lt::Tensor<float> h = make_tensor<float>(r, lt::Device::host());
        lt::Tensor<float> g = h.to(d);
        CHECK(g.device() == d);
        CHECK(g.is_realized());
        CHECK(g.to_vector() == h.to_vector());
        CHECK(g.to(lt::Device::host()).to_vector() == h.to_vector());
        CHECK(g.to(d).node_ptr() == g.node_ptr());  // already there: the same tensor

        // Views and expressions move as their values.
        lt::Tensor<float> t = g.transpose(0, 1).to(lt::Device::host());
        check_close(t, permute(r, {1, 0}));
        check_close((lt::exp(h) + 1.0f).to(d), map(r, [](double x) { return std::exp(x) + 1.0; }), 1e-5);

        // Every dtype, including bool (one byte per element on every device).
        lt::Tensor<bool> b = lt::tensor<bool>({true, false, true}).to(d);
        CHECK(b.to_vector() == std::vector<bool>{true, false, true});
        lt::Tensor<std::int64_t> i = lt::tensor<std::int64_t>({-(std::int64_t(1) << 40), 7}).to(d);
        CHECK((i * 2).to_vector() == std::vector<std::int64_t>{-(std::int64_t(1) << 41), 14});
        lt::Tensor<std::uint8_t> u = lt::tensor<std::uint8_t>({250, 3}).to(d);
        CHECK((u + std::uint8_t(10)).to_vector() == std::vector<std::uint8_t>{4, 13});

        // Results computed on the device equal the host's.
        lt::Tensor<float> a = make_tensor<float>(random_ref<float>({64, 33}, 12), lt::Device::host());
        auto on_host = (lt::tanh(a) * a).sum(1).to_vector();
        auto on_device = (lt::tanh(a.to(d)) * a.to(d)).sum(1).to_vector();
        REQUIRE(on_host.size() == on_device.size());
        for (std::size_t k = 0; k < on_host.size(); ++k) CHECK(on_device[k] == doctest::Approx(on_host[k]).epsilon(1e-5));
    }
}

TEST_CASE("combining tensors of different devices is an error naming both devices") {
    for (lt::Device d : opencl_devices()) {
        lt::Tensor<float> h = lt::tensor<float>({1, 2, 3}, {3}, lt::Device::host());
        lt::Tensor<float> g = lt::tensor<float>({1, 2, 3}, {3}, d);
        for (auto attempt : {0, 1, 2}) {
            try {
                if (attempt == 0) lt::Tensor<float> bad = h + g;
                if (attempt == 1) lt::Tensor<float> bad = lt::where(h > 1.0f, g, h);
                if (attempt == 2) lt::Tensor<float> bad = lt::maximum(g * 2.0f, h);
                FAIL("expected a DeviceError");
            } catch (const lt::DeviceError& e) {
                const std::string msg = e.what();
                CHECK(msg.find("host") != std::string::npos);
                CHECK(msg.find(d.str()) != std::string::npos);
                CHECK(msg.find(".to(") != std::string::npos);
            }
        }
        // Both stay usable.
        CHECK((h + g.to(lt::Device::host())).to_vector() == std::vector<float>{2, 4, 6});
    }
}

TEST_CASE("the disk cache: a fresh directory is filled, a second build loads from it") {
    for (lt::Device d : opencl_devices()) {
        auto& be = backend_of(d);
        auto& disk = be.disk_cache();
        TempDir dir;
        UsingCacheDir use(disk, dir.path / "nested" / "cache");  // created on demand

        const std::string source = unique_source();
        const auto before = disk.stats();
        auto built = lt::detail::opencl::OpenCLBackend::ProgramSource::Memory;
        REQUIRE(be.build_program(source, &built));
        CHECK(built == lt::detail::opencl::OpenCLBackend::ProgramSource::Compiler);
        CHECK(disk.stats().writes == before.writes + 1);
        CHECK(disk.stats().misses == before.misses + 1);
        std::size_t files = 0;
        for (auto& f : fs::directory_iterator(dir.path / "nested" / "cache")) files += f.path().extension() == ".clbin";
        CHECK(files == 1);

        // In memory: no disk access at all.
        REQUIRE(be.build_program(source, &built));
        CHECK(built == lt::detail::opencl::OpenCLBackend::ProgramSource::Memory);
        CHECK(disk.stats().hits == before.hits);

        // A new process is simulated by forgetting what is in memory: the binary comes from disk.
        be.clear_kernel_cache();
        REQUIRE(be.build_program(source, &built));
        CHECK(built == lt::detail::opencl::OpenCLBackend::ProgramSource::Disk);
        CHECK(disk.stats().hits == before.hits + 1);

        // And a kernel run through realize() still computes the right values from it.
        be.clear_kernel_cache();
        lt::Tensor<float> x = lt::tensor<float>({1, 2, 3, 4}, {4}, d);
        CHECK((x * 3.0f - 1.0f).to_vector() == std::vector<float>{2, 5, 8, 11});
        be.clear_kernel_cache();
        CHECK((x * 3.0f - 1.0f).to_vector() == std::vector<float>{2, 5, 8, 11});
    }
}

TEST_CASE("the disk cache: corrupt, truncated and foreign files are rebuilt with a warning") {
    for (lt::Device d : opencl_devices()) {
        auto& be = backend_of(d);
        auto& disk = be.disk_cache();
        TempDir dir;
        UsingCacheDir use(disk, dir.path);
        const std::string source = unique_source();
        REQUIRE(be.build_program(source));
        fs::path file;
        for (auto& f : fs::directory_iterator(dir.path)) file = f.path();
        REQUIRE(fs::exists(file));
        const auto good_size = fs::file_size(file);

        auto rebuilds_with_warning = [&](const char* what) {
            INFO(what);
            be.clear_kernel_cache();
            const auto before = disk.stats();
            auto built = lt::detail::opencl::OpenCLBackend::ProgramSource::Memory;
            CaptureCerr err;
            REQUIRE(be.build_program(source, &built));
            CHECK(built == lt::detail::opencl::OpenCLBackend::ProgramSource::Compiler);
            CHECK(disk.stats().warnings == before.warnings + 1);
            CHECK(disk.stats().hits == before.hits);
            CHECK(disk.stats().writes == before.writes + 1);  // replaced by a good entry
            CHECK(fs::file_size(file) == good_size);
        };

        {  // flipped bytes in the middle
            std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(static_cast<std::streamoff>(good_size / 2));
            f.write("\xde\xad\xbe\xef", 4);
        }
        rebuilds_with_warning("corrupt");
        fs::resize_file(file, good_size / 3);
        rebuilds_with_warning("truncated");
        {
            std::ofstream f(file, std::ios::binary | std::ios::trunc);
            f << "not a cache entry at all";
        }
        rebuilds_with_warning("foreign");

        // After the rebuilds the entry is good again.
        be.clear_kernel_cache();
        const auto before = disk.stats();
        auto built = lt::detail::opencl::OpenCLBackend::ProgramSource::Compiler;
        REQUIRE(be.build_program(source, &built));
        CHECK(built == lt::detail::opencl::OpenCLBackend::ProgramSource::Disk);
        CHECK(disk.stats().hits == before.hits + 1);
    }
}

TEST_CASE("the disk cache: an unusable directory is a warning, never an error") {
    for (lt::Device d : opencl_devices()) {
        auto& be = backend_of(d);
        auto& disk = be.disk_cache();
        TempDir dir;
        const fs::path blocker = dir.path / "a-file";
        std::ofstream(blocker) << "x";
        // A directory below a regular file can be neither created nor written (even by root).
        UsingCacheDir use(disk, blocker / "cache");
        const auto before = disk.stats();
        auto built = lt::detail::opencl::OpenCLBackend::ProgramSource::Memory;
        {
            CaptureCerr err;
            REQUIRE(be.build_program(unique_source(), &built));
            CHECK(err.text.str().find("warning") != std::string::npos);
            CHECK(err.text.str().find("a-file") != std::string::npos);
        }
        CHECK(built == lt::detail::opencl::OpenCLBackend::ProgramSource::Compiler);
        CHECK(disk.stats().warnings == before.warnings + 1);
        CHECK(disk.stats().writes == before.writes);
        lt::Tensor<float> x = lt::tensor<float>({1, 2}, {2}, d);
        be.clear_kernel_cache();
        {
            CaptureCerr err;  // the warning is given once per directory
            CHECK((x + 1.0f).to_vector() == std::vector<float>{2, 3});
            CHECK(err.text.str().empty());
        }
        disk.set_directory("");  // off
        CHECK(be.build_program(unique_source()));
    }
}

TEST_CASE("the disk cache: concurrent writers of one entry never publish a torn file") {
    // Two caches on one directory stand for two processes building the same kernel at once.
    TempDir dir;
    lt::detail::opencl::ProgramDiskCache one(dir.path.string()), two(dir.path.string());
    const std::string key = "kernel source + options + device + driver";
    std::vector<unsigned char> a(200000, 'a'), b(300000, 'b');
    std::atomic<bool> wrong{false};
    auto writer = [&](lt::detail::opencl::ProgramDiskCache& cache, const std::vector<unsigned char>& bin) {
        for (int i = 0; i < 20; ++i) {
            cache.store(key, bin);
            auto got = cache.load(key);  // whichever writer won, a whole entry
            if (!got || (*got != a && *got != b)) wrong = true;
        }
    };
    std::thread t1(writer, std::ref(one), std::cref(a)), t2(writer, std::ref(two), std::cref(b));
    t1.join();
    t2.join();
    CHECK(!wrong);
    CHECK(one.stats().warnings + two.stats().warnings == 0);
    const auto files = std::distance(fs::directory_iterator(dir.path), fs::directory_iterator());
    CHECK(files == 1);  // no temporary files left behind
    // A different key never loads this entry, even from the same file name.
    CHECK(!one.load(key + " "));
}

// (ctest runs this case with LAZYTENSOR_DEVICE set: test opencl_default_device.)
TEST_CASE("LAZYTENSOR_DEVICE picks the default device" * doctest::skip(!std::getenv("LAZYTENSOR_DEVICE"))) {
    const char* env = std::getenv("LAZYTENSOR_DEVICE");
    CHECK(lt::default_device() == lt::detail::parse_device(env));
    lt::Tensor<float> x = lt::tensor<float>({1, 2, 3});
    CHECK(x.device() == lt::detail::parse_device(env));
    CHECK((x * 2.0f).sum().item() == 12.0f);
}

TEST_CASE("a kernel that does not build throws with the build log and the source") {
    for (lt::Device d : opencl_devices()) {
        auto& be = backend_of(d);
        const std::string broken = "__kernel void broken(__global float* x) {\n    x[0] = no_such_variable_here;\n}\n";
        try {
            be.build_program(broken);
            FAIL("expected a BackendError");
        } catch (const lt::BackendError& e) {
            const std::string msg = e.what();
            CHECK(msg.find("CL_BUILD_PROGRAM_FAILURE") != std::string::npos);
            CHECK(msg.find("build log") != std::string::npos);
            CHECK(msg.find("no_such_variable_here") != std::string::npos);  // in the log and the listing
            CHECK(msg.find("2      x[0] = no_such_variable_here;") != std::string::npos);  // numbered source
            CHECK(msg.find(d.str()) != std::string::npos);
        }
        // The backend still works afterwards.
        CHECK((lt::tensor<float>({1, 2}, {2}, d) * 2.0f).to_vector() == std::vector<float>{2, 4});
    }
}

TEST_CASE("a failed realize on OpenCL leaves every tensor usable") {
    for (lt::Device d : opencl_devices()) {
        lt::Tensor<float> x = lt::tensor<float>({1, 2, 3}, {3}, d);
        lt::Tensor<float> y = x * 2.0f;
        // Far more than any device can hold in one buffer: allocation fails inside realize.
        lt::Tensor<float> huge = lt::full<float>({std::int64_t(1) << 22, std::int64_t(1) << 22}, 1.0f, d) + 1.0f;
        try {
            huge.realize();
            FAIL("expected a BackendError");
        } catch (const lt::BackendError& e) {
            CHECK(std::string(e.what()).find("cannot allocate") != std::string::npos);
            CHECK(std::string(e.what()).find(d.str()) != std::string::npos);
        }
        CHECK(!huge.is_realized());
        CHECK(!y.is_realized());
        CHECK((y + 1.0f).to_vector() == std::vector<float>{3, 5, 7});
    }
}

namespace {

/// Makes the next kernel launched on `backend` fail while the device runs it: it waits for a user
/// event that then fails (drivers report this like a kernel that faults: in its event, and NVIDIA
/// also in the next wait). Returns the event, to be failed once the kernel is enqueued.
cl_event fail_next_launch(lt::detail::opencl::OpenCLBackend& backend) {
    cl_int err = CL_SUCCESS;
    cl_event failing = clCreateUserEvent(backend.context(), &err);
    REQUIRE(err == CL_SUCCESS);
    backend.detail_launch_dependency() = failing;
    return failing;
}
void fail_now(cl_event failing) {
    clSetUserEventStatus(failing, CL_OUT_OF_RESOURCES);
    clReleaseEvent(failing);
}

/// How many BackendErrors `wait` threw in `times` calls; the first message in `message`.
template <class F>
int reports(F&& wait, int times, std::string& message) {
    int thrown = 0;
    for (int i = 0; i < times; ++i) {
        try {
            wait();
        } catch (const lt::BackendError& e) {
            if (!thrown++) message = e.what();
        }
    }
    return thrown;
}

}  // namespace

TEST_CASE("the launch a test makes wait is one device's: two devices launching do not take each other's" *
          doctest::skip(lt::devices().size() < 3)) {
    // (CI runs this with POCL_DEVICES="pthread pthread": two OpenCL devices.)
    const lt::Device d0 = lt::Device::opencl(0), d1 = lt::Device::opencl(1);
    auto& b0 = backend_of(d0);
    cl_int err = CL_SUCCESS;
    cl_event pending = clCreateUserEvent(b0.context(), &err);
    REQUIRE(err == CL_SUCCESS);
    b0.detail_launch_dependency() = pending;
    lt::Tensor<float> x = lt::tensor<float>({1, 2, 3}, {3}, d1);
    lt::Tensor<float> y = x * 2.0f + 1.0f;
    y.realize();  // a launch on opencl:1
    CHECK(b0.detail_launch_dependency().load() == pending);  // still opencl:0's
    CHECK(backend_of(d1).detail_launch_dependency().load() == nullptr);
    clSetUserEventStatus(pending, CL_COMPLETE);  // (had opencl:1 taken it, its kernel may now run)
    CHECK(y.to_vector() == std::vector<float>{3, 5, 7});
    // opencl:0's next launch takes it (and waits for it: complete).
    lt::Tensor<float> z = lt::tensor<float>({1, 2}, {2}, d0) * 3.0f;
    z.realize();
    CHECK(b0.detail_launch_dependency().load() == nullptr);
    CHECK(z.to_vector() == std::vector<float>{3, 6});
    clReleaseEvent(pending);
}

TEST_CASE("a kernel that fails while the device runs it is reported by the next wait, once, as README says") {
    for (lt::Device d : opencl_devices()) {
        auto& backend = backend_of(d);
        // README: launch events are on by default except on GPUs (the variable is unset in tests).
        CHECK(backend.launch_events() == (backend.kind() != "gpu"));
        const bool had_events = backend.launch_events();
        for (bool events : {true, false}) {
            const std::string mode = events ? "launch events on" : "launch events off";
            INFO(mode);
            backend.set_launch_events(events);
            lt::Tensor<float> x = lt::tensor<float>({1, 2, 3}, {3}, d);
            x.realize();
            lt::synchronize(d);
            std::string m;

            // A wait reports it. With launch events, on every device, naming the kernel; without,
            // only where the driver's own wait reports it (NVIDIA; PoCL's says nothing). Never twice.
            cl_event failing = fail_next_launch(backend);
            lt::Tensor<float> y = x * 3.0f + 1.0f;
            y.realize();  // enqueued: realize has returned, the kernel has not run
            CHECK(backend.detail_launch_dependency().load() == nullptr);
            CHECK(y.is_realized());
            fail_now(failing);
            int n = reports([&] { lt::synchronize(d); }, 3, m);
            INFO(m);
            CHECK(n <= 1);
            if (events) {
                CHECK(n == 1);
                CHECK(m.rfind("OpenCL: kernel lt_kernel", 0) == 0);
                CHECK(m.find("failed while " + d.str()) != std::string::npos);
                CHECK(m.find("execution status") != std::string::npos);
                CHECK(m.find("the tensors it computed have undefined contents; tensors it did not compute are intact") != std::string::npos);
            } else if (n == 1) {
                CHECK(m.find("failed") != std::string::npos);
            }
            // Tensors that realize did not compute are intact, and new work runs.
            CHECK(x.to_vector() == std::vector<float>{1, 2, 3});
            CHECK((x + 1.0f).to_vector() == std::vector<float>{2, 3, 4});

            // A read waits too.
            failing = fail_next_launch(backend);
            lt::Tensor<float> z = x - 1.0f;
            z.realize();
            fail_now(failing);
            n = reports([&] { x.to_vector(); }, 3, m);
            CHECK(n <= 1);
            if (events) CHECK(n == 1);
            CHECK(x.to_vector() == std::vector<float>{1, 2, 3});

            // Realizes without a wait: reported once in all, by a realize (a scan of finished
            // launches every 512) or at the latest by the next wait.
            failing = fail_next_launch(backend);
            (x * 5.0f).realize();
            fail_now(failing);
            n = reports([&, k = 0.0f]() mutable { (x + k++).realize(); }, 1000, m);
            n += reports([&] { lt::synchronize(d); }, 2, m);
            CHECK(n <= 1);
            if (events) CHECK(n == 1);
            CHECK((x + 1.0f).to_vector() == std::vector<float>{2, 3, 4});
        }
        backend.set_launch_events(had_events);
    }
}

TEST_CASE("LAZYTENSOR_DEBUG=2 prints the generated OpenCL C; =3 the device time and bandwidth") {
    for (lt::Device d : opencl_devices()) {
        const int saved = lt::debug_level();
        lt::Tensor<float> x = lt::tensor<float>(std::vector<float>(4096, 1.0f), {64, 64}, d);
        backend_of(d).clear_kernel_cache();
        std::string two, three;
        {
            CaptureCerr err;
            lt::set_debug_level(2);
            CHECK((lt::exp(x) * 3.0f).sum(1).to_vector().size() == 64);
            two = err.text.str();
        }
        {
            CaptureCerr err;
            lt::set_debug_level(3);
            CHECK((x - 7.0f).sum(0).to_vector().size() == 64);
            three = err.text.str();
        }
        lt::set_debug_level(saved);
        CHECK(two.find("__kernel") != std::string::npos);
        CHECK(two.find("exp(") != std::string::npos);
        CHECK(two.find("on " + d.str()) != std::string::npos);
        CHECK(three.find("ms on the device") != std::string::npos);
        CHECK(three.find("GB/s") != std::string::npos);
    }
}

// Lowering joins a pad's bounds with bool minimum. Where the compiler could fold a bound, the
// old spelling (a comparison of bools) made clang warn "result of comparison of constant 0 with
// expression of type 'bool' is always false", and PoCL printed "1 warning generated." for the
// user's program. LAZYTENSOR_DEBUG=2 shows a compiler's log of a kernel that built.
TEST_CASE("bool maximum, minimum and orderings on OpenCL: right, and no compiler warning with a constant operand") {
    const lt::BinaryOp ops[] = {lt::BinaryOp::Maximum, lt::BinaryOp::Minimum, lt::BinaryOp::Lt,
                                lt::BinaryOp::Le,      lt::BinaryOp::Gt,      lt::BinaryOp::Ge};
    // Kernel names of their own each run and device, so that PoCL's cache (keyed by the
    // preprocessed source) cannot answer in place of the compiler.
    const std::string run = std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    std::string source = "(__global const uchar* x, __global uchar* y) {\n"
                         "    const bool v = x[get_global_id(0)] != 0;\n    const long zero = (long)(0);\n"
                         "    const bool k = (zero < 0L);\n";
    int at = 0;
    for (lt::BinaryOp op : ops)
        for (bool constant_first : {true, false})
            source += "    y[" + std::to_string(at++) + "] = (uchar)" +
                      lt::detail::opencl::cl_binary(op, lt::DType::Bool, constant_first ? "k" : "v", constant_first ? "v" : "k") + ";\n";
    source += "}\n";
    for (lt::Device d : opencl_devices()) {
        const std::string nonce = run + "_" + std::to_string(d.index);
        const int saved = lt::debug_level();
        std::string log;
        {
            CaptureCerr err;
            lt::set_debug_level(2);
            backend_of(d).build_program("__kernel void bool_ops_" + nonce + source);
            log = err.text.str();
        }
        lt::set_debug_level(saved);
        CHECK_MESSAGE(log.find("warning") == std::string::npos, log);

        // The truth tables, and bool max and min reductions (any, all), through the API.
        const lt::Tensor<bool> a = lt::tensor<bool>({false, false, true, true}, {4}, d);
        const lt::Tensor<bool> b = lt::tensor<bool>({false, true, false, true}, {4}, d);
        CHECK(lt::maximum(a, b).to_vector() == std::vector<bool>{false, true, true, true});
        CHECK(lt::minimum(a, b).to_vector() == std::vector<bool>{false, false, false, true});
        CHECK((a < b).to_vector() == std::vector<bool>{false, true, false, false});
        CHECK((a <= b).to_vector() == std::vector<bool>{true, true, false, true});
        CHECK((a > b).to_vector() == std::vector<bool>{false, false, true, false});
        CHECK((a >= b).to_vector() == std::vector<bool>{true, false, true, true});
        const lt::Tensor<bool> m = lt::tensor<bool>({false, false, false, true, true, true, false, true, false}, {3, 3}, d);
        CHECK(m.max(1).to_vector() == std::vector<bool>{false, true, true});
        CHECK(m.min(1).to_vector() == std::vector<bool>{false, true, false});
        CHECK(m.max(0).to_vector() == std::vector<bool>{true, true, true});
        CHECK(m.min(0).to_vector() == std::vector<bool>{false, false, false});

        // A comparison of a value with itself, of a realized tensor and of a lazy one: integers get
        // the answer (no self-comparison in the source, so no compiler warning of one); floats
        // keep NaN's.
        const lt::Tensor<std::int32_t> xi = lt::tensor<std::int32_t>({1, -2, 3}, {3}, d);
        const lt::Tensor<std::int32_t> lazy = xi.flip(0) + std::numeric_limits<std::int32_t>::max();
        const lt::Tensor<float> xf = lt::tensor<float>({1.0f, std::nanf(""), -0.0f}, {3}, d);
        std::vector<std::vector<bool>> got;
        std::string integer_log;
        {
            CaptureCerr err;
            lt::set_debug_level(2);
            backend_of(d).clear_kernel_cache();
            for (const lt::Tensor<bool>& r : {lt::Tensor<bool>(xi <= xi), lt::Tensor<bool>(xi < xi), lt::Tensor<bool>(xi == xi),
                                              lt::Tensor<bool>(xi != xi), lt::Tensor<bool>(lazy >= lazy), lt::Tensor<bool>(lazy > lazy)})
                got.push_back(r.to_vector());
            integer_log = err.text.str();
            for (const lt::Tensor<bool>& r : {lt::Tensor<bool>(xf == xf), lt::Tensor<bool>(xf >= xf)}) got.push_back(r.to_vector());
            log = err.text.str();
        }
        lt::set_debug_level(saved);
        CHECK_MESSAGE(log.find("warning") == std::string::npos, log);
        const std::regex self_comparison(R"(\((\w+) (<|<=|==|!=|>=|>) \1\))");
        CHECK_MESSAGE(!std::regex_search(integer_log, self_comparison), integer_log);
        CHECK_MESSAGE(integer_log.find("__kernel") != std::string::npos, integer_log);  // the sources were shown
        const std::vector<std::vector<bool>> expected = {{true, true, true},   {false, false, false}, {true, true, true},
                                                         {false, false, false}, {true, true, true},   {false, false, false},
                                                         {true, false, true},   {true, false, true}};
        CHECK(got == expected);

        // LAZYTENSOR_DEBUG=2 shows what the compiler said of a kernel that built: PoCL's clang
        // warns of this self-comparison (other compilers may say nothing).
        if (backend_of(d).platform_name().find("Portable Computing Language") != std::string::npos) {
            {
                CaptureCerr err;
                lt::set_debug_level(2);
                backend_of(d).build_program("__kernel void warns_" + nonce + "(__global int* x) {\n    const int a = x[0];\n"
                                            "    x[1] = (a == a);\n}\n");
                log = err.text.str();
            }
            lt::set_debug_level(saved);
            CHECK_MESSAGE(log.find("the OpenCL C compiler of " + d.str()) != std::string::npos, log);
            CHECK_MESSAGE(log.find("self-comparison") != std::string::npos, log);
        }
    }
}

TEST_CASE("the renderer keeps work-groups within the device's limit") {
    // The backend renders again with a smaller limit when a compiled kernel cannot use the
    // device's largest work-group (register pressure); every launch must respect the limit.
    lt::Tensor<float> x = lt::tensor<float>(std::vector<float>(64 * 3000, 1.0f), {64, 3000});
    lt::Tensor<float> row = lt::exp(x - x.max(1, true)), col = x.sum(0), all = (x * 2.0f).sum(), map = x * 3.0f;
    for (auto* t : {&row, &col, &all, &map}) {
        const auto w = lt::detail::walk_graph({t->node_ptr().get()});
        const auto plan = lt::detail::plan_cache().get(w);
        for (const auto& item : plan->items) {
            REQUIRE(item.own_kernel());  // (each is a kernel item)
            for (std::size_t limit : {1, 2, 32, 64, 256, 1024}) {
                lt::detail::opencl::DeviceTraits traits;
                traits.max_work_group = limit;
                traits.compute_units = 16;
                for (bool gpu : {true, false}) {
                    traits.gpu = gpu;
                    const auto r = lt::detail::opencl::render(*item.own_kernel(), traits);
                    REQUIRE(!r.stages.empty());
                    if (t == &all && limit >= 256) CHECK(r.stages.size() == 2);  // one output: split
                    for (const auto& st : r.stages) {
                        CHECK(st.local[0] * st.local[1] <= limit);
                        CHECK(st.global[0] % st.local[0] == 0);
                        CHECK(st.global[1] % st.local[1] == 0);
                        CHECK(r.source.find("reqd_work_group_size(" + std::to_string(st.local[0]) + ", " +
                                            std::to_string(st.local[1]) + ", 1)") != std::string::npos);
                    }
                }
            }
        }
    }
}

TEST_CASE("reductions of every shape class agree with the host: rows, columns, split, tiny") {
    // Shapes picked to hit each launch geometry: long rows (work-group tree), short rows (many
    // rows per group), columns (lanes over outputs), one output over many elements (two-stage),
    // extents that are not multiples of the vector width, and an empty reduction.
    const std::vector<std::pair<lt::Shape, int>> cases = {
        {{3, 5000}, 1}, {{4096, 3}, 1}, {{5000, 3}, 0}, {{7, 6}, 0}, {{1 << 18}, 0},
        {{300001}, 0},  {{2, 3, 4, 5}, 2}, {{2, 0, 3}, 1}, {{9, 1024}, 1},
    };
    for (lt::Device d : opencl_devices()) {
        for (const auto& c : cases) {
            const lt::Shape& shape = c.first;  // (not a structured binding: INFO's lambda captures it)
            const int axis = c.second;
            INFO("shape " << shape << " axis " << axis);
            const Ref r = random_ref<float>(shape, 21);
            lt::Tensor<float> x = make_tensor<float>(r, d);
            auto add = [](double a, double b) { return a + b; };
            check_close(x.sum(axis), reduce(r, {axis}, false, 0.0, add), 1e-4, 1e-4);
            if (lt::numel(shape) > 0) check_close(x.max(axis), reduce(r, {axis}, false, -INFINITY, ref_max));
            const Ref ri = random_ref<std::int32_t>(shape, 22, -100, 100);
            check_close(make_tensor<std::int32_t>(ri, d).sum(axis), reduce(ri, {axis}, false, 0.0, add));
            const Ref rb = random_ref<bool>(shape, 23);
            if (lt::numel(shape) > 0) {
                lt::Tensor<bool> b = make_tensor<bool>(rb, d);
                check_close(b.max(axis), reduce(rb, {axis}, false, 0.0, ref_max));
                check_close(b.min(axis), reduce(rb, {axis}, false, 1.0, ref_min));
                check_close(b.sum(axis), reduce(rb, {axis}, false, 0.0, add));
            }
        }
    }
}

// ------------------------------------------------------------------ the disk cache's size cap

#if defined(__unix__) || defined(__APPLE__)
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#endif

namespace {

/// The bytes of the cache's entry files (*.clbin) in `dir`, what the cap limits.
std::uint64_t clbin_bytes(const fs::path& dir) {
    std::uint64_t total = 0;
    for (auto& f : fs::directory_iterator(dir))
        if (f.path().extension() == ".clbin") total += fs::file_size(f.path());
    return total;
}

std::string fake_cache_key(int i) { return "fake program " + std::to_string(i) + "\noptions, device and driver"; }

/// A stand-in for a program binary: `size` bytes that depend on the key alone, so that every
/// writer of a key stores the same entry and a load can be checked against it.
std::vector<unsigned char> fake_cache_binary(const std::string& key, std::size_t size) {
    std::mt19937_64 rng(lt::detail::opencl::fnv1a(key.data(), key.size()));
    std::vector<unsigned char> out(size);
    for (auto& b : out) b = static_cast<unsigned char>(rng());
    return out;
}

/// Marks an entry as last used `minutes` ago (timestamps can be too coarse for a test to order
/// entries by the times of its own loads and stores).
void age_entry(lt::detail::opencl::ProgramDiskCache& cache, const std::string& key, int minutes) {
    fs::last_write_time(cache.path_for(key), fs::file_time_type::clock::now() - std::chrono::minutes(minutes));
}

/// Stores `rounds` entries of 20 to 24 KiB whose keys overlap other workers' (worker w starts at
/// key 70 * w of 300) and loads four after each store (its own, two it stored before, and the
/// one the next worker is storing about now), checking every hit against the bytes of its key.
/// Empty when all went right, else what went wrong (a warning or an exception included).
std::string hammer_disk_cache(lt::detail::opencl::ProgramDiskCache& cache, int worker, int rounds) {
    const std::string who = "worker " + std::to_string(worker);
    auto binary = [](int k) {
        const std::string key = fake_cache_key(k);
        return fake_cache_binary(key, 20480 + lt::detail::opencl::fnv1a(key.data(), key.size()) % 4096);
    };
    try {
        for (int i = 0; i < rounds; ++i) {
            const int k = (70 * worker + i) % 300;
            cache.store(fake_cache_key(k), binary(k));
            for (int back : {0, 3, 17, 300 - 70}) {
                const int j = (k + 300 - back) % 300;
                const auto got = cache.load(fake_cache_key(j));
                if (got && *got != binary(j)) return who + " loaded wrong bytes for key " + std::to_string(j);
            }
        }
    } catch (const std::exception& e) {
        return who + " got an exception: " + e.what();
    }
    if (cache.stats().warnings) return who + " got warnings";
    return {};
}

/// The most bytes one hammer_disk_cache entry file takes.
constexpr std::uint64_t kHammerEntryMax = 24576 + 128;

}  // namespace

TEST_CASE("the disk cache: past LAZYTENSOR_CACHE_MAX_MB the least recently used entries are evicted") {
    TempDir dir;
    lt::detail::opencl::ProgramDiskCache cache(dir.path.string());
    const std::uint64_t cap = 1 << 20;
    cache.set_max_bytes(cap);
    CHECK(cache.max_bytes() == cap);

    // Files that are not entries are left alone and not counted; a temporary file of a writer
    // that crashed an hour ago is deleted, one of a write in progress is not.
    std::ofstream(dir.path / "notes.txt") << std::string(2 << 20, 'n');
    const fs::path crashed = cache.path_for("crashed") + ".tmp1", writing = cache.path_for("writing") + ".tmp2";
    std::ofstream(crashed) << "half an entry";
    std::ofstream(writing) << "half an entry";
    fs::last_write_time(crashed, fs::file_time_type::clock::now() - std::chrono::hours(2));

    // Ten entries of 100 KiB fit in 1 MiB.
    auto binary = [](int i) { return fake_cache_binary(fake_cache_key(i), 100 << 10); };
    for (int i = 0; i < 10; ++i) cache.store(fake_cache_key(i), binary(i));
    CHECK(cache.stats().writes == 10);
    CHECK(cache.stats().evictions == 0);
    for (int i = 0; i < 10; ++i) CHECK(fs::exists(cache.path_for(fake_cache_key(i))));
    CHECK(clbin_bytes(dir.path) <= cap);
    CHECK(!fs::exists(crashed));
    CHECK(fs::exists(writing));

    // Entry 0 is the oldest, but a load makes it the most recently used.
    for (int i = 0; i < 10; ++i) age_entry(cache, fake_cache_key(i), 100 - i);
    REQUIRE(cache.load(fake_cache_key(0)) == binary(0));

    // The eleventh passes the cap: the two least recently used go, down to 90% of the cap.
    cache.store(fake_cache_key(10), binary(10));
    CHECK(cache.stats().evictions == 2);
    CHECK(!cache.load(fake_cache_key(1)));
    CHECK(!cache.load(fake_cache_key(2)));
    CHECK(fs::exists(cache.path_for(fake_cache_key(0))));
    for (int i = 3; i <= 10; ++i) CHECK(fs::exists(cache.path_for(fake_cache_key(i))));
    CHECK(clbin_bytes(dir.path) <= cap - cap / 10);

    // Below the cap again, the next store deletes nothing (the 10% slack).
    cache.store(fake_cache_key(11), binary(11));
    CHECK(cache.stats().evictions == 2);
    CHECK(clbin_bytes(dir.path) <= cap);
    for (int i : {0, 3, 4, 5, 6, 7, 8, 9, 10, 11}) CHECK(cache.load(fake_cache_key(i)) == binary(i));

    // A lower cap applies at the next store, which keeps its own entry.
    cache.set_max_bytes(300 << 10);
    cache.store(fake_cache_key(12), binary(12));
    CHECK(clbin_bytes(dir.path) <= (300 << 10) - (30 << 10));
    CHECK(cache.load(fake_cache_key(12)) == binary(12));
    CHECK(cache.stats().evictions >= 2 + 8);

    CHECK(fs::file_size(dir.path / "notes.txt") == std::uintmax_t(2) << 20);
    CHECK(fs::exists(writing));
    CHECK(cache.stats().warnings == 0);
}

TEST_CASE("the disk cache: an entry larger than the cap is kept until newer entries come") {
    TempDir dir;
    lt::detail::opencl::ProgramDiskCache cache(dir.path.string());
    const std::uint64_t cap = 1 << 20;
    cache.set_max_bytes(cap);
    const auto small_a = fake_cache_binary("a", 100 << 10), small_b = fake_cache_binary("b", 100 << 10);
    const auto small_c = fake_cache_binary("c", 100 << 10), big = fake_cache_binary("big", 3 << 19);  // 1.5 MiB
    cache.store("a", small_a);
    cache.store("b", small_b);
    age_entry(cache, "a", 30);
    age_entry(cache, "b", 20);

    // Alone past the cap: everything else goes, the new entry stays (the cap is best effort).
    cache.store("big", big);
    CHECK(cache.stats().evictions == 2);
    CHECK(!cache.load("a"));
    CHECK(!cache.load("b"));
    CHECK(cache.load("big") == big);
    CHECK(clbin_bytes(dir.path) > cap);

    // The next entry is newer: now the big one goes.
    age_entry(cache, "big", 10);
    cache.store("c", small_c);
    CHECK(cache.stats().evictions == 3);
    CHECK(!cache.load("big"));
    CHECK(cache.load("c") == small_c);
    CHECK(clbin_bytes(dir.path) <= cap);
    CHECK(cache.stats().warnings == 0);
}

#if defined(__unix__) || defined(__APPLE__)

TEST_CASE("the disk cache: a bad LAZYTENSOR_CACHE_MAX_MB is a ValueError naming it") {
    TempDir dir;
    for (const char* bad : {"abc", "-5", "0", "12x", "+5", " 5", "1.5", "99999999999999999999"}) {
        INFO("LAZYTENSOR_CACHE_MAX_MB=\"" << bad << "\"");
        ScopedEnvVar env("LAZYTENSOR_CACHE_MAX_MB", bad);
        try {
            lt::detail::opencl::ProgramDiskCache cache(dir.path.string());
            FAIL("expected a ValueError");
        } catch (const lt::ValueError& e) {
            CHECK(std::string(e.what()).find(std::string("LAZYTENSOR_CACHE_MAX_MB=") + bad + " is ") == 0);
            CHECK(std::string(e.what()).find("MiB") != std::string::npos);
        }
    }
    CHECK_THROWS_WITH_AS(([&] {
                             ScopedEnvVar env("LAZYTENSOR_CACHE_MAX_MB", "abc");
                             lt::detail::opencl::ProgramDiskCache cache(dir.path.string());
                         }()),
                         "LAZYTENSOR_CACHE_MAX_MB=abc is not a size in MiB (a whole number from 1 to 8796093022207)", lt::ValueError);
    {
        ScopedEnvVar env("LAZYTENSOR_CACHE_MAX_MB", "1");
        CHECK(lt::detail::opencl::ProgramDiskCache(dir.path.string()).max_bytes() == std::uint64_t(1) << 20);
    }
    {
        ScopedEnvVar env("LAZYTENSOR_CACHE_MAX_MB", "0020");
        CHECK(lt::detail::opencl::ProgramDiskCache(dir.path.string()).max_bytes() == std::uint64_t(20) << 20);
    }
    {
        ScopedEnvVar env("LAZYTENSOR_CACHE_MAX_MB", nullptr);
        CHECK(lt::detail::opencl::ProgramDiskCache(dir.path.string()).max_bytes() == std::uint64_t(512) << 20);
    }
    {
        ScopedEnvVar env("LAZYTENSOR_CACHE_MAX_MB", "");  // empty is unset, as for every variable
        CHECK(lt::detail::opencl::ProgramDiskCache(dir.path.string()).max_bytes() == std::uint64_t(512) << 20);
    }
}

TEST_CASE("the disk cache: processes sharing a capped directory load only whole, right entries") {
    // Three processes store, load and evict at once: entries vanish under each other's
    // listings, removals and loads. Each child checks its own loads and says how it went in
    // its exit status (it must leave with _exit: no doctest, no destructors of the parent's
    // objects, TempDir's included).
    TempDir dir, results;
    const std::uint64_t cap = 1 << 20;
    constexpr int kChildren = 3;
    std::vector<pid_t> children;
    std::cout.flush();
    std::fflush(nullptr);  // or what is buffered may be printed by the children too
    for (int c = 0; c < kChildren; ++c) {
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            std::ofstream report(results.path / std::to_string(c));
            try {
                lt::detail::opencl::ProgramDiskCache cache(dir.path.string());
                cache.set_max_bytes(cap);
                const std::string problem = hammer_disk_cache(cache, c, 200);
                report << cache.stats().hits << " " << cache.stats().evictions << " " << problem << std::endl;
                ::_exit(problem.empty() ? 0 : 1);
            } catch (const std::exception& e) {
                report << "0 0 " << e.what() << std::endl;
            }
            ::_exit(2);
        }
        children.push_back(pid);
    }
    for (pid_t pid : children) {
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
    }
    std::size_t hits = 0, evictions = 0;
    for (int c = 0; c < kChildren; ++c) {
        std::ifstream in(results.path / std::to_string(c));
        std::size_t h = 0, e = 0;
        REQUIRE(static_cast<bool>(in >> h >> e));
        std::string problem;
        std::getline(in >> std::ws, problem);
        CHECK(problem == "");
        hits += h;
        evictions += e;
    }
    CHECK(hits > 0);       // loads were checked, not all misses
    CHECK(evictions > 0);  // 3 x 200 entries of 20 KiB passed 1 MiB many times over
    std::size_t temporaries = 0;
    for (auto& f : fs::directory_iterator(dir.path)) temporaries += f.path().string().find(".tmp") != std::string::npos;
    CHECK(temporaries == 0);
    // Each process counts only its own writes between scans: the directory may pass the cap by
    // a tenth of it and an entry per process, until the next store scans it again.
    const std::uint64_t total = clbin_bytes(dir.path);
    INFO("bytes left: " << total);
    CHECK(total <= cap + kChildren * (cap / 10 + kHammerEntryMax));
    lt::detail::opencl::ProgramDiskCache next(dir.path.string());
    next.set_max_bytes(cap);
    next.store(fake_cache_key(1000), fake_cache_binary(fake_cache_key(1000), 20480));
    CHECK(clbin_bytes(dir.path) <= cap);
    CHECK(next.stats().warnings == 0);
}

#endif

TEST_CASE("the disk cache: threads sharing one cache, and two caches on one directory, stay right and capped") {
    const std::uint64_t cap = 1 << 20;
    {
        // One cache object knows every byte written: the directory never ends past the cap.
        TempDir dir;
        lt::detail::opencl::ProgramDiskCache cache(dir.path.string());
        cache.set_max_bytes(cap);
        std::vector<std::string> problems(4);
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t) threads.emplace_back([&, t] { problems[static_cast<std::size_t>(t)] = hammer_disk_cache(cache, t, 200); });
        for (auto& t : threads) t.join();
        for (const auto& p : problems) CHECK(p == "");
        CHECK(cache.stats().evictions > 0);
        CHECK(cache.stats().hits > 0);
        CHECK(clbin_bytes(dir.path) <= cap);
    }
    {
        // Two cache objects on one directory are two processes' caches in all but the process.
        TempDir dir;
        lt::detail::opencl::ProgramDiskCache one(dir.path.string()), two(dir.path.string());
        one.set_max_bytes(cap);
        two.set_max_bytes(cap);
        std::string p1, p2;
        std::thread t1([&] { p1 = hammer_disk_cache(one, 0, 200); }), t2([&] { p2 = hammer_disk_cache(two, 1, 200); });
        t1.join();
        t2.join();
        CHECK(p1 == "");
        CHECK(p2 == "");
        CHECK(one.stats().evictions + two.stats().evictions > 0);
        CHECK(one.stats().hits + two.stats().hits > 0);
        CHECK(clbin_bytes(dir.path) <= cap + 2 * (cap / 10 + kHammerEntryMax));
    }
}

TEST_CASE("realize_async: its Event is done once the device has run the work; another device's realize can wait for it") {
    // A kernel held back by a user event stands in for a long one.
    for (lt::Device d : opencl_devices()) {
        auto& backend = backend_of(d);
        cl_int err = CL_SUCCESS;
        cl_event pending = clCreateUserEvent(backend.context(), &err);
        REQUIRE(err == CL_SUCCESS);
        backend.detail_launch_dependency() = pending;
        const lt::Tensor<float> x = lt::tensor<float>({1, 2, 3}, {3}, d);
        const lt::Tensor<float> y = x * 2.0f + 1.0f;
        const lt::Event done = lt::realize_async({y});
        CHECK(y.is_realized());
        CHECK_FALSE(done.is_done());
        clSetUserEventStatus(pending, CL_COMPLETE);
        done.wait();
        CHECK(done.is_done());
        CHECK(y.to_vector() == std::vector<float>{3, 5, 7});
        clReleaseEvent(pending);
    }
    const lt::Tensor<float> h = lt::arange<float>(0, 4) * 2.0f;
    CHECK(lt::realize_async({h}).is_done());  // the host's work is done when it returns
    CHECK(lt::Event().is_done());
    const std::vector<lt::Device> both = opencl_devices();
    if (both.size() < 2 || backend_of(both[0]).context() != backend_of(both[1]).context()) return;
    // opencl:1's work waits, on the device, for opencl:0's event (the host thread goes on).
    auto& b0 = backend_of(both[0]);
    cl_int err = CL_SUCCESS;
    cl_event pending = clCreateUserEvent(b0.context(), &err);
    REQUIRE(err == CL_SUCCESS);
    b0.detail_launch_dependency() = pending;
    const lt::Tensor<float> first = lt::tensor<float>({1, 2}, {2}, both[0]) * 3.0f;
    const lt::Event e0 = lt::realize_async({first});
    const lt::Tensor<float> second = lt::tensor<float>({5, 6}, {2}, both[1]) - 1.0f;
    const lt::Event e1 = lt::realize_async({second}, e0);
    CHECK_FALSE(e0.is_done());
    CHECK_FALSE(e1.is_done());  // held behind opencl:0's kernel
    clSetUserEventStatus(pending, CL_COMPLETE);
    e1.wait();
    CHECK(e0.is_done());
    CHECK(second.to_vector() == std::vector<float>{4, 5});
    CHECK(first.to_vector() == std::vector<float>{3, 6});
    clReleaseEvent(pending);
}

// Last in the file: it adds devices to the process (lt::devices() lists them from then on).
TEST_CASE("OpenCL interop: lazytensor on an application's context and queue, cl_mem both ways without a copy") {
    for (lt::Device ours : opencl_devices()) {
        cl_device_id dev = lt::opencl::device_id(ours);
        CHECK(lt::opencl::context(ours) == backend_of(ours).context());
        CHECK(lt::opencl::queue(ours) == backend_of(ours).queue());
        cl_int err = CL_SUCCESS;
        cl_context ctx = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err);
        REQUIRE(err == CL_SUCCESS);
        cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);  // no profiling, in order
        REQUIRE(err == CL_SUCCESS);
        const float written[6] = {1, 2, 3, 4, 5, 6};
        cl_mem mem = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof written, nullptr, &err);
        REQUIRE(err == CL_SUCCESS);
        REQUIRE(clEnqueueWriteBuffer(q, mem, CL_TRUE, 0, sizeof written, written, 0, nullptr, nullptr) == CL_SUCCESS);

        const lt::Device d = lt::opencl::adopt(ctx, dev, q);
        CHECK(d.kind == lt::Device::Kind::OpenCL);
        CHECK(d.index >= 1);
        CHECK(lt::opencl::context(d) == ctx);
        CHECK(lt::opencl::queue(d) == q);
        bool listed = false;
        for (const lt::DeviceInfo& info : lt::devices()) listed = listed || info.device == d;
        CHECK(listed);
        bool released = false;
        {
            lt::Tensor<float> x = lt::opencl::wrap<float>(mem, {2, 3}, d, [&] { released = true; });
            CHECK((x * 2.0f).to_vector() == std::vector<float>{2, 4, 6, 8, 10, 12});  // what the application wrote
            x.assign(x + 10.0f);                                                      // into the application's buffer
            float back[6] = {};
            REQUIRE(clEnqueueReadBuffer(q, mem, CL_TRUE, 0, sizeof back, back, 0, nullptr, nullptr) == CL_SUCCESS);
            CHECK(std::vector<float>(back, back + 6) == std::vector<float>{11, 12, 13, 14, 15, 16});
            // A result of lazytensor's, read by the application from the handed-out cl_mem.
            const lt::Tensor<float> y = (lt::matmul(x, x.t()) * 0.5f).realize();
            const lt::opencl::Memory m = lt::opencl::memory(y.index({1}));
            CHECK(m.byte_offset == 2 * sizeof(float));
            float row[2] = {};
            REQUIRE(clEnqueueReadBuffer(q, m.mem, CL_TRUE, m.byte_offset, sizeof row, row, 0, nullptr, nullptr) == CL_SUCCESS);
            CHECK(row[0] == 0.5f * (11 * 14 + 12 * 15 + 13 * 16));
            CHECK(row[1] == 0.5f * (14 * 14 + 15 * 15 + 16 * 16));
            // Moving to and from the device lazytensor opened (another context: through the host).
            CHECK(x.to(ours).to_vector() == std::vector<float>{11, 12, 13, 14, 15, 16});
            CHECK(lt::tensor<float>({1, 2}, {2}, ours).to(d).to_vector() == std::vector<float>{1, 2});
            // Bad handles.
            CHECK_THROWS_AS(lt::opencl::wrap<float>(mem, {2, 3}, ours), lt::DeviceError);  // another context's
            CHECK_THROWS_AS(lt::opencl::wrap<float>(mem, {7}, d), lt::ValueError);        // past its end
            CHECK_THROWS_AS(lt::opencl::memory(lt::ones<float>({2})), lt::DeviceError);   // the host
            CHECK_THROWS_AS(lt::opencl::context(lt::Device::host()), lt::DeviceError);
            CHECK(released == false);
        }
        lt::synchronize(d);
        CHECK(released);
        cl_command_queue other = clCreateCommandQueue(backend_of(ours).context(), dev, 0, &err);
        REQUIRE(err == CL_SUCCESS);
        CHECK_THROWS_AS(lt::opencl::adopt(ctx, dev, other), lt::DeviceError);  // a queue of another context
        cl_command_queue unordered = clCreateCommandQueue(ctx, dev, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
        if (err == CL_SUCCESS) {
            CHECK_THROWS_AS(lt::opencl::adopt(ctx, dev, unordered), lt::DeviceError);
            clReleaseCommandQueue(unordered);
        }
        // A context alone: lazytensor makes its queue in it.
        const lt::Device own_queue = lt::opencl::adopt(ctx, dev);
        CHECK(lt::opencl::queue(own_queue) != q);
        CHECK((lt::arange<float>(3, own_queue) + 1.0f).to_vector() == std::vector<float>{1, 2, 3});
        clReleaseCommandQueue(other);
        clReleaseMemObject(mem);
        clReleaseCommandQueue(q);  // lazytensor keeps its own references
        clReleaseContext(ctx);
        CHECK((lt::ones<float>({2}, d) * 3.0f).to_vector() == std::vector<float>{3, 3});
    }
}
