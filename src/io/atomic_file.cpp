// AtomicFile: temporary file, write, fsync, rename, fsync the directory.
#include "fluxion/io/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include "fluxion/core/error.hpp"

namespace fx::io {
namespace {

std::string directory_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

[[noreturn]] void fail_errno(const char* call, const std::string& path) {
  detail::fail("fx::io::AtomicFile: ", call, " '", path, "': ", std::strerror(errno));
}

// Unique among threads of this process; the pid separates processes.
std::atomic<uint64_t> counter{0};

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  FX_CHECK(!path_.empty() && path_.back() != '/', "fx::io::AtomicFile: '", path_,
           "' is not a file name");
  tmp_ = directory_of(path_) + "/." + base_of(path_) + ".tmp." + std::to_string(::getpid()) + "." +
         std::to_string(counter.fetch_add(1));
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) fail_errno("open", tmp_);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void* data, size_t bytes) {
  FX_CHECK(fd_ >= 0, "fx::io::AtomicFile: write to '", path_, "' after commit");
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail_errno("write", tmp_);
    p += n;
    bytes -= size_t(n);
  }
}

void AtomicFile::commit() {
  FX_CHECK(fd_ >= 0, "fx::io::AtomicFile: '", path_, "' committed twice");
  // The data must be on disk before the rename makes it visible; otherwise a power cut could
  // leave the new name pointing at a file whose blocks were never written.
  if (::fsync(fd_) != 0) fail_errno("fsync", tmp_);
  int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail_errno("close", tmp_);
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail_errno("rename to", path_);
  committed_ = true;
  // The rename itself is a change to the directory, durable only once the directory is synced.
  std::string dir = directory_of(path_);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) fail_errno("open directory", dir);
  int rc = ::fsync(dfd);
  ::close(dfd);
  if (rc != 0) fail_errno("fsync directory", dir);
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  AtomicFile f(path);
  f.write(bytes.data(), bytes.size());
  f.commit();
}

}  // namespace fx::io
