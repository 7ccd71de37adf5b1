// AtomicFile: write a file so that a crash, a kill or a full disk mid-write never leaves a damaged
// file in its place: readers see either the old file or the complete new one.
//
//   const std::string header = "{}";
//   fx::Tensor tensor = fx::zeros({4});
//   fx::io::AtomicFile f("run/model.safetensors");   // writes "run/.model.safetensors.tmp.<pid>.<n>"
//   f.write(header.data(), header.size());
//   f.write(tensor.raw_data(), tensor.numel() * 4);
//   f.commit();                                       // fsync, rename over the target, fsync the dir
//
// Without commit() (an exception, an early return) the destructor removes the temporary file and
// the target is untouched. The temporary lives in the target's directory because rename(2) is
// atomic only within one file system. Every failing system call throws fx::Error naming the path
// and the call's error text.
#pragma once
#include <cstddef>
#include <string>

namespace fx::io {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t bytes);
  void commit();

  const std::string& path() const { return path_; }
  const std::string& temporary_path() const { return tmp_; }

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

// The whole of `bytes` written to `path` through an AtomicFile.
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace fx::io
