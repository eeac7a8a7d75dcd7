// The on-disk cache of OpenCL program binaries, so that a second process skips the compiler.
//
// An entry is keyed by everything that decides the binary: the source, the build options, the
// device's name and the driver's and platform's versions. The file name is a hash of that key;
// the file holds the whole key again, the binary and a checksum, and is only used when all of
// them match: a hash collision, a truncated, corrupt or foreign file is never loaded as the
// wrong kernel. Files are written to a temporary name and renamed into place, so concurrent
// writers (two processes building the same kernel) each publish a whole file. A directory that
// cannot be created or written, or a bad file, is reported once as a warning and ignored: the
// program is then built from source as if there were no cache.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <system_error>
#include <vector>

namespace lazytensor::detail::opencl {

inline std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t h = 14695981039346656037ull) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/// LAZYTENSOR_CACHE_DIR, else $XDG_CACHE_HOME/lazytensor, else ~/.cache/lazytensor; "off"
/// (or an empty result) disables the disk cache.
inline std::string default_cache_dir() {
    auto env = [](const char* name) -> const char* {
        const char* v = std::getenv(name);
        return v && *v ? v : nullptr;
    };
    if (const char* v = env("LAZYTENSOR_CACHE_DIR")) return std::string(v) == "off" ? std::string() : std::string(v);
    if (const char* v = env("XDG_CACHE_HOME")) return std::string(v) + "/lazytensor";
    if (const char* v = env("HOME")) return std::string(v) + "/.cache/lazytensor";
    return {};
}

class ProgramDiskCache {
public:
    struct Stats {
        std::size_t hits = 0, misses = 0, writes = 0, warnings = 0;
    };

    explicit ProgramDiskCache(std::string directory) : dir_(std::move(directory)) {}

    /// An empty directory disables the cache.
    void set_directory(std::string directory) {
        std::lock_guard<std::mutex> lock(mutex_);
        dir_ = std::move(directory);
        warned_.clear();
    }
    std::string directory() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return dir_;
    }
    Stats stats() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return stats_;
    }

    /// The file an entry with this key lives in ("" when the cache is off).
    std::string path_for(const std::string& key) const {
        std::lock_guard<std::mutex> lock(mutex_);
        return path_locked(key);
    }

    /// The cached binary for `key`, if a whole, matching entry exists.
    std::optional<std::vector<unsigned char>> load(const std::string& key) {
        std::lock_guard<std::mutex> lock(mutex_);
        const std::string path = path_locked(key);
        if (path.empty()) return std::nullopt;
        std::ifstream in(path, std::ios::binary);
        if (!in) {
            ++stats_.misses;
            return std::nullopt;
        }
        std::vector<char> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::vector<unsigned char> binary;
        if (!parse(file, key, binary)) {
            ++stats_.misses;
            warn(path, "is not a valid lazytensor program cache entry (corrupt, truncated or for another key); "
                       "rebuilding it from source");
            return std::nullopt;
        }
        ++stats_.hits;
        return binary;
    }

    /// Publishes an entry; failures are warnings.
    void store(const std::string& key, const std::vector<unsigned char>& binary) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (dir_.empty() || binary.empty()) return;
        std::error_code ec;
        std::filesystem::create_directories(dir_, ec);
        if (ec) {
            warn(dir_, "cannot be created (" + ec.message() + "); OpenCL programs are not cached on disk");
            return;
        }
        const std::string path = path_locked(key);
        std::mt19937_64 rng(std::random_device{}());
        const std::string tmp = path + ".tmp" + std::to_string(rng());
        {
            std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
            const std::string bytes = serialize(key, binary);
            if (out) out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
            if (!out || !out.flush()) {
                out.close();
                std::filesystem::remove(tmp, ec);
                warn(dir_, "is not writable; OpenCL programs are not cached on disk");
                return;
            }
        }
        std::filesystem::rename(tmp, path, ec);
        if (ec) {
            std::filesystem::remove(tmp, ec);
            warn(dir_, "is not writable; OpenCL programs are not cached on disk");
            return;
        }
        ++stats_.writes;
    }

private:
    static constexpr char kMagic[8] = {'L', 'T', 'C', 'L', 'B', 'I', 'N', '1'};

    std::string path_locked(const std::string& key) const {
        if (dir_.empty()) return {};
        char name[64];
        std::snprintf(name, sizeof name, "%016llx%016llx.clbin",
                      static_cast<unsigned long long>(fnv1a(key.data(), key.size())),
                      static_cast<unsigned long long>(fnv1a(key.data(), key.size(), 0x9e3779b97f4a7c15ull)));
        return dir_ + "/" + name;
    }

    static void put_u64(std::string& s, std::uint64_t v) {
        for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    }
    static bool get_u64(const std::vector<char>& f, std::size_t& at, std::uint64_t& v) {
        if (at > f.size() || f.size() - at < 8) return false;
        v = 0;
        for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(f[at + static_cast<std::size_t>(i)])) << (8 * i);
        at += 8;
        return true;
    }

    // magic | key length | key | binary length | binary | checksum of all before it
    static std::string serialize(const std::string& key, const std::vector<unsigned char>& binary) {
        std::string s(kMagic, sizeof kMagic);
        put_u64(s, key.size());
        s += key;
        put_u64(s, binary.size());
        s.append(reinterpret_cast<const char*>(binary.data()), binary.size());
        put_u64(s, fnv1a(s.data(), s.size()));
        return s;
    }

    static bool parse(const std::vector<char>& f, const std::string& key, std::vector<unsigned char>& binary) {
        std::size_t at = sizeof kMagic;
        if (f.size() < at + 24 || !std::equal(kMagic, kMagic + sizeof kMagic, f.begin())) return false;
        std::uint64_t key_len = 0, bin_len = 0, sum = 0;
        if (!get_u64(f, at, key_len) || key_len != key.size() || f.size() - at < key_len) return false;
        if (!std::equal(key.begin(), key.end(), f.begin() + static_cast<std::ptrdiff_t>(at))) return false;
        at += key_len;
        if (!get_u64(f, at, bin_len) || f.size() - at < bin_len || f.size() - at - bin_len != 8) return false;
        const std::size_t bin_at = at;
        at += bin_len;
        if (!get_u64(f, at, sum) || sum != fnv1a(f.data(), bin_at + bin_len)) return false;
        binary.assign(f.begin() + static_cast<std::ptrdiff_t>(bin_at), f.begin() + static_cast<std::ptrdiff_t>(bin_at + bin_len));
        return !binary.empty();
    }

    void warn(const std::string& what, const std::string& problem) {
        ++stats_.warnings;
        if (!warned_.insert(what).second) return;
        std::cerr << "[lazytensor] warning: OpenCL program cache: " << what << " " << problem << "\n";
    }

    mutable std::mutex mutex_;
    std::string dir_;
    Stats stats_;
    std::set<std::string> warned_;
};

}  // namespace lazytensor::detail::opencl
