//===- FileFormatsTest.cpp - manifests, data files and file rules ---------===//
//
// The file rules the ranks, zbc run and zbc inspect share: a checkpoint
// manifest round-trips and refuses any edit (its own checksum), a file of
// samples keeps inputs and labels paired and finite (and packed documents
// ordered, their positions restarting, their labels' ignore_index only
// where a cross-entropy reads them), a JSON number outside
// int64 (or a lone '-') is refused instead of aborting the reader, and the
// one-history rule of a checkpoint directory.
//
//===----------------------------------------------------------------------===//

#include "zbc/contracts/CheckpointLayout.h"
#include "zbc/contracts/CheckpointManifest.h"
#include "zbc/contracts/DataFile.h"
#include "zbc/contracts/Files.h"
#include "zbc/contracts/JsonSubset.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

using namespace zbc::rt;

namespace {

CheckpointManifest sampleManifest() {
  CheckpointManifest m;
  m.step = m.dataPosition = 4;
  m.seed = std::numeric_limits<int64_t>::max(); // the largest --seed
  m.model = "gpt";
  m.modelHash = "0123456789abcdef";
  m.schedule = "zb-h1";
  m.optimizer = "adamw";
  m.ranks = 2;
  m.stages = 2;
  m.microbatches = 4;
  m.files = {{0, "rank0.safetensors", 10, "00000000000000aa"},
             {1, "rank1.safetensors", 12, "00000000000000bb"}};
  return m;
}

StoredTensor floats(std::vector<int64_t> shape, std::vector<float> values) {
  StoredTensor t;
  t.dtype = "F32";
  t.shape = std::move(shape);
  t.data.resize(values.size() * 4);
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

StoredTensor longs(std::vector<int64_t> shape, std::vector<int64_t> values) {
  StoredTensor t;
  t.dtype = "I64";
  t.shape = std::move(shape);
  t.data.resize(values.size() * 8);
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

} // namespace

TEST(CheckpointManifest, RoundTrips) {
  CheckpointManifest m = sampleManifest(), back;
  std::string text = checkpointManifestText(m);
  ASSERT_EQ(parseCheckpointManifest("m.json", text, back), "");
  EXPECT_EQ(back.step, 4);
  EXPECT_EQ(back.seed, m.seed);
  EXPECT_EQ(back.files.size(), 2u);
  EXPECT_EQ(back.files[1].fnv1a64, "00000000000000bb");
  EXPECT_EQ(checkpointManifestText(back), text);
}

TEST(CheckpointManifest, AnyEditFailsItsOwnChecksum) {
  std::string text = checkpointManifestText(sampleManifest());
  // A digit of the step, of the seed, a byte of the model's name.
  for (const char *from : {"\"step\": 4", "\"seed\": 9", "\"gpt\""}) {
    std::string edited = text;
    size_t at = edited.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    edited[at + std::strlen(from) - 2] ^= 1;
    CheckpointManifest m;
    EXPECT_NE(parseCheckpointManifest("m.json", edited, m)
                  .find("fails its own checksum"),
              std::string::npos)
        << from;
  }
  CheckpointManifest m;
  EXPECT_NE(parseCheckpointManifest("m.json", "{\"format\": \"zbc-checkpoint-1\"}", m)
                .find("older zbc"),
            std::string::npos);
  EXPECT_NE(parseCheckpointManifest("m.json", "", m).find("no checksum line"),
            std::string::npos);
}

TEST(JsonSubset, NumbersOutsideInt64AreRefusedNotThrown) {
  JsonValue v;
  std::string error;
  EXPECT_FALSE(parseJson("-", v, error));
  EXPECT_FALSE(parseJson("[-]", v, error));
  EXPECT_FALSE(parseJson("9223372036854775808", v, error));
  ASSERT_TRUE(parseJson("9223372036854775807", v, error));
  EXPECT_EQ(v.number, std::numeric_limits<int64_t>::max());
  ASSERT_TRUE(parseJson("-9223372036854775808", v, error));
  EXPECT_EQ(v.number, std::numeric_limits<int64_t>::min());
}

TEST(DataFile, SamplesStayPairedAndFinite) {
  std::vector<DataKey> keys = {{"input.x", "F32", false, 0, {2}},
                               {"label.y", "I64", true, 3, {1}}};
  TensorFile file;
  file["input.x"] = floats({3, 2}, {0, 1, 2, 3, 4, 5});
  file["label.y"] = longs({3, 1}, {0, 1, 2});
  int64_t samples = 0;
  EXPECT_EQ(checkSampleTensors("d", file, keys, samples), "");
  EXPECT_EQ(samples, 3);

  file["label.y"] = longs({2, 1}, {0, 1});
  EXPECT_NE(checkSampleTensors("d", file, keys, samples)
                .find("'label.y' has 2 samples, 'input.x' has 3"),
            std::string::npos);

  file["label.y"] = longs({3, 1}, {0, 3, 1});
  EXPECT_NE(checkSampleTensors("d", file, keys, samples)
                .find("holds 3 at element 1, outside [0, 3)"),
            std::string::npos);

  file["label.y"] = longs({3, 1}, {0, 1, 2});
  file["input.x"] = floats({3, 2}, {0, 1, 2, std::nanf(""), 4, 5});
  EXPECT_NE(checkSampleTensors("d", file, keys, samples)
                .find("NaN or infinity at element 3 (sample 1)"),
            std::string::npos);
  StoredTensor bf16;
  bf16.dtype = "BF16";
  bf16.data = {0, 0, char(0x80), char(0xff)}; // 0, then -infinity
  EXPECT_EQ(firstNonFinite(bf16), 1);
}

// Note [Packed documents]: 1 sample of 2 rows of 4 tokens, the first row
// two documents and padding, the second one document.
struct PackedFile {
  std::vector<DataKey> keys = {
      {"input.tokens", "I64", true, 50, {2, 4}},
      {"input.positions", "I64", true, 4, {2, 4}},
      {"input.documents", "I64", true, 4, {2, 4}},
      {"label.targets", "I64", true, 50, {2, 4}, kDefaultIgnoreIndex}};
  TensorFile file;
  PackedFile() {
    file["input.tokens"] = longs({1, 2, 4}, {7, 8, 9, 0, 1, 2, 3, 4});
    file["input.positions"] = longs({1, 2, 4}, {0, 1, 0, 0, 0, 1, 2, 3});
    file["input.documents"] = longs({1, 2, 4}, {0, 0, 1, 2, 0, 0, 0, 0});
    file["label.targets"] =
        longs({1, 2, 4}, {8, -100, -100, -100, 2, 3, 4, -100});
  }
  std::string check(KeyScope scope = KeyScope::Rank) {
    int64_t samples = 0;
    return checkSampleTensors("p", file, keys, samples, scope);
  }
};

bool says(const std::string &error, const std::string &part) {
  if (error.find(part) != std::string::npos)
    return true;
  ADD_FAILURE() << "'" << error << "' does not say '" << part << "'";
  return false;
}

TEST(DataFile, PackedRowsAreAccepted) {
  PackedFile packed;
  EXPECT_EQ(packed.check(KeyScope::Model), "");
}

TEST(DataFile, DocumentsThatDecreaseInARowAreRefused) {
  PackedFile packed;
  packed.file["input.documents"] = longs({1, 2, 4}, {0, 0, 1, 2, 0, 1, 0, 0});
  packed.file["input.positions"] = longs({1, 2, 4}, {0, 1, 0, 0, 0, 0, 0, 1});
  says(packed.check(), "'p': tensor 'input.documents' decreases at sample 0, "
                       "row 1, column 2 (document 0 after 1)");
  // A new row may start anywhere: only within a row is the order held.
  packed.file["input.documents"] = longs({1, 2, 4}, {0, 0, 1, 2, 1, 1, 1, 1});
  packed.file["input.positions"] = longs({1, 2, 4}, {0, 1, 0, 0, 0, 1, 2, 3});
  EXPECT_EQ(packed.check(), "");
}

TEST(DataFile, PositionsRestartWithTheirDocument) {
  PackedFile packed;
  // Document 1 of row 0 goes on from document 0's positions.
  packed.file["input.positions"] = longs({1, 2, 4}, {0, 1, 2, 0, 0, 1, 2, 3});
  says(packed.check(), "'p': tensor 'input.positions' holds 2 at sample 0, "
                       "row 0, column 2, where document 1 starts");
  // A skipped position within a document.
  packed.file["input.positions"] = longs({1, 2, 4}, {0, 1, 0, 0, 0, 1, 3, 3});
  says(packed.check(), "holds 3 at sample 0, row 1, column 2, where document "
                       "0 goes on");
  // A row starts a document, whatever came before it.
  packed.file["input.positions"] = longs({1, 2, 4}, {0, 1, 0, 0, 3, 0, 1, 2});
  says(packed.check(), "holds 3 at sample 0, row 1, column 0, where document "
                       "0 starts");
  // Without positions read by the model, documents alone are checked.
  packed.keys.erase(packed.keys.begin() + 1);
  EXPECT_EQ(packed.check(), "");
}

TEST(DataFile, PackedDataAndAModelThatIsNotPackedAreRefusedBothWays) {
  PackedFile packed;
  // The model reads documents, the file has none.
  packed.file.erase("input.documents");
  says(packed.check(), "'p' has no tensor 'input.documents' (the model reads "
                       "it): the model masks its attention by document and "
                       "these samples are not packed documents");
  // The file is packed, the model reads no documents: only a check that
  // holds every key of the model can tell (a rank holds its own).
  PackedFile unread;
  unread.keys.erase(unread.keys.begin() + 2);
  says(unread.check(KeyScope::Model),
       "'p' holds packed documents (tensor 'input.documents') but the model "
       "reads no documents input");
  EXPECT_EQ(unread.check(KeyScope::Rank), "");
}

TEST(DataFile, DocumentsOfAnotherShapeAreRefused) {
  PackedFile packed;
  packed.file["input.documents"] = longs({1, 1, 8}, {0, 0, 1, 2, 2, 2, 2, 2});
  says(packed.check(), "'p': tensor 'input.documents' must be I64 of shape "
                       "[N, 2, 4] (N >= 1 samples of one microbatch each); it "
                       "is I64 of shape [1, 1, 8] (packed for another model? "
                       "`zbc pack --microbatch-size 2 --seq-len 4` writes "
                       "[N, 2, 4])");
}

TEST(DataFile, TheIgnoreIndexOnlyInLabelsThatTakeIt) {
  PackedFile packed;
  EXPECT_EQ(packed.check(), "");
  // Labels that the loss does not count take no -100.
  packed.keys[3].ignoreIndex.reset();
  says(packed.check(), "'p': tensor 'label.targets' holds -100 at element 1, "
                       "outside [0, 50) (-100, 'no loss here', is taken only "
                       "by the labels of the zb.cross_entropy that is the "
                       "loss)");
  // Nor does an input, and a label takes its own ignore_index only.
  packed.keys[3].ignoreIndex = -1;
  says(packed.check(), "holds -100 at element 1, outside [0, 50) and not the "
                       "ignore_index -1 of the loss's cross-entropy");
  packed.keys[3].ignoreIndex = kDefaultIgnoreIndex;
  packed.file["input.tokens"] = longs({1, 2, 4}, {7, 8, 9, -100, 1, 2, 3, 4});
  says(packed.check(), "'p': tensor 'input.tokens' holds -100 at element 3, "
                       "outside [0, 50)");
}

TEST(Files, NonRegularFilesAreNamed) {
  int64_t size = 0;
  EXPECT_NE(regularFileError(::testing::TempDir(), "the data file", size)
                .find("is a directory"),
            std::string::npos);
  EXPECT_NE(regularFileError("/dev/zero", "the data file", size)
                .find("is a device"),
            std::string::npos);
  EXPECT_NE(regularFileError("/no/such/file", "the data file", size)
                .find("cannot read the data file"),
            std::string::npos);
}

TEST(CheckpointLayout, OneHistoryPerDirectory) {
  std::string root = ::testing::TempDir() + "/zbc-one-history";
  for (int step : {2, 4}) {
    std::string dir = checkpointDirectory(root, step);
    ASSERT_EQ(makeDirectories(dir), "");
    std::ofstream(checkpointManifest(dir)) << "{}";
  }
  // A fresh run, and a rewind to step-2, would write over step-4.
  EXPECT_NE(checkpointRootConflict(root, "", 0).find("another run"),
            std::string::npos);
  EXPECT_NE(checkpointRootConflict(root, root + "/step-2", 2)
                .find("would write over the later checkpoints"),
            std::string::npos);
  // Continuing from the latest is this history; a refused step-4 does not
  // count.
  EXPECT_EQ(checkpointRootConflict(root, root + "/step-4", 4), "");
  EXPECT_EQ(checkpointRootConflict(root, root + "/step-2", 2,
                                   {root + "/step-4"}),
            "");
  ASSERT_EQ(checkpointsIn(root).size(), 2u);
  EXPECT_EQ(checkpointsIn(root).front().step, 4);
}
