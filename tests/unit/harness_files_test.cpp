// Atomic writes of goldens, proofs and records: a folder created, a file
// replaced whole or not at all, links, FIFOs and devices written through, and
// nothing written through a link that leaves the golden folder.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "fusion/errors.h"
#include "harness/record/files.h"
#include "tests/unit/golden_fixtures.h"

namespace fg {
namespace {
namespace fs = std::filesystem;
using namespace testing_golden;

TEST(WriteAtomic, CreatesFoldersReplacesContentLeavesNoTempFiles) {
  TempDir dir;
  fs::path p = dir.path() / "cpu/x/C_w2.json";
  write_atomic(p.string(), "old\n");
  EXPECT_EQ(read_file(p), "old\n");
  write_atomic(p.string(), "new text\n");
  EXPECT_EQ(read_file(p), "new text\n");
  int entries = 0;
  for (const auto& e : fs::directory_iterator(p.parent_path())) {
    ++entries;
    EXPECT_EQ(e.path().filename(), "C_w2.json");
  }
  EXPECT_EQ(entries, 1);
}

TEST(WriteAtomic, UnwritableTargetIsAUserErrorAndKeepsNothing) {
  TempDir dir;
  write_file(dir.path() / "blocker", "a file where a folder should be\n");
  EXPECT_THROW(write_atomic((dir.path() / "blocker/x/C_w2.json").string(), "{}\n"), UserError);
  EXPECT_EQ(read_file(dir.path() / "blocker"), "a file where a folder should be\n");
}

// A path that is no regular file is written through, never replaced by
// one (an audit's `--out /dev/full`, as root, replaced the device and
// exited 0); a symlink keeps its link and its file takes the text.
TEST(WriteAtomic, FollowsLinksAndWritesThroughWhatIsNoRegularFile) {
  TempDir dir;
  const fs::path file = dir.path() / "real.json", link = dir.path() / "link.json";
  write_file(file, "old\n");
  fs::create_symlink(file, link);
  write_atomic(link.string(), "new\n");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_file(file), "new\n");
  // a FIFO with a reader: the text goes down it, and it stays a FIFO
  const fs::path fifo = dir.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int rd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(rd, 0);
  write_atomic(fifo.string(), "down the pipe\n");
  char buf[64] = {};
  const ssize_t n = ::read(rd, buf, sizeof buf - 1);
  ::close(rd);
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), "down the pipe\n");
  EXPECT_EQ(fs::status(fifo).type(), fs::file_type::fifo);
  // a device that refuses the write: bad input named, the device kept.
  // Not as root: there a regression of this very rule would replace the
  // machine's /dev/full (the FIFO above covers the write-through).
  if (::geteuid() != 0 && fs::exists("/dev/full")) {
    std::string msg;
    try {
      write_atomic("/dev/full", "x");
    } catch (const UserError& e) {
      msg = e.what();
    }
    EXPECT_NE(msg.find("/dev/full: error: cannot write it"), std::string::npos) << msg;
    EXPECT_EQ(fs::status("/dev/full").type(), fs::file_type::character);
  }
  // this process's own descriptor: written down it as it is open
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  write_atomic("/dev/fd/" + std::to_string(fds[1]), "through fd\n");
  ::close(fds[1]);
  char got[64] = {};
  const ssize_t m = ::read(fds[0], got, sizeof got - 1);
  ::close(fds[0]);
  EXPECT_EQ(std::string(got, m > 0 ? static_cast<size_t>(m) : 0), "through fd\n");
  // a FIFO with no reader: bad input at once, not a wait for ever
  const fs::path lonely = dir.path() / "lonely";
  ASSERT_EQ(::mkfifo(lonely.c_str(), 0600), 0);
  try {
    write_atomic(lonely.string(), "x");
    ADD_FAILURE() << "a FIFO with no reader was written";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("a FIFO with no reader"), std::string::npos) << e.what();
  }
  // a link to a folder is refused, the link kept
  const fs::path dlink = dir.path() / "dlink";
  fs::create_directory_symlink(dir.path(), dlink);
  EXPECT_THROW(write_atomic(dlink.string(), "x"), UserError);
  EXPECT_TRUE(fs::is_symlink(dlink));
}

// What belongs in a folder is never written through a link that leaves it
// (a golden folder comes from a pull request): the file's own link, a
// folder's link, a dangling link; a link that stays inside is followed.
TEST(WriteInside, RefusesALinkThatLeavesTheFolderAndWritesNothing) {
  TempDir dir;
  const fs::path golden = dir.path() / "golden", outside = dir.path() / "elsewhere";
  write_file(outside / "target.json", "theirs\n");
  write_file(golden / "cpu/x/real.json", "old\n");
  auto refused = [&](const fs::path& p) {
    try {
      write_inside(golden.string(), p.string(), "mine\n");
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("(written)");
  };
  fs::create_symlink(outside / "target.json", golden / "cpu/x/C_w1.json");
  std::string msg = refused(golden / "cpu/x/C_w1.json");
  EXPECT_NE(msg.find("is a link that leaves " + golden.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find((outside / "target.json").string()), std::string::npos) << msg;
  EXPECT_EQ(read_file(outside / "target.json"), "theirs\n");
  // dangling: where the file would be created
  fs::create_symlink(outside / "new.json", golden / "cpu/x/C_w2.json");
  EXPECT_NE(refused(golden / "cpu/x/C_w2.json").find("leaves"), std::string::npos);
  EXPECT_FALSE(fs::exists(outside / "new.json"));
  // a repro's folder that is a link out of the golden folder
  fs::create_directory_symlink(outside, golden / "cpu/y");
  EXPECT_NE(refused(golden / "cpu/y/C_w1.json").find("leaves"), std::string::npos);
  EXPECT_FALSE(fs::exists(outside / "C_w1.json"));
  // a link inside the folder is followed, as write_atomic does
  fs::create_symlink(golden / "cpu/x/real.json", golden / "cpu/x/C_w4.json");
  EXPECT_EQ(refused(golden / "cpu/x/C_w4.json"), "(written)");
  EXPECT_EQ(read_file(golden / "cpu/x/real.json"), "mine\n");
  // a golden folder that is itself a link is the folder it names
  fs::create_directory_symlink(golden, dir.path() / "g2");
  write_inside((dir.path() / "g2").string(), (dir.path() / "g2/cpu/x/new.json").string(), "ok\n");
  EXPECT_EQ(read_file(golden / "cpu/x/new.json"), "ok\n");
}

}  // namespace
}  // namespace fg
