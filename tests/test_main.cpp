// The one doctest main shared by every test executable. The test files of one
// group share an executable (tests/CMakeLists.txt) and ctest runs each file's
// cases as a test of its own (--source-file=*/<file>): a run whose filters
// match no test case fails, so that a renamed or emptied file cannot pass with
// nothing checked.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

namespace {

// The number of test cases that passed the filters, from doctest's end-of-run report.
struct case_counter : doctest::IReporter {
  static inline unsigned matched = 0;
  static inline bool reported = false;
  explicit case_counter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    matched = stats.numTestCasesPassingFilters;
    reported = true;
  }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("kforge_case_counter", 1, case_counter);

}  // namespace

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit()) return rc;  // --help, --list-test-cases and other queries
  if (rc == 0 && case_counter::reported && case_counter::matched == 0) {
    std::fprintf(stderr, "kforge tests: no test case matches the filters\n");
    return 1;
  }
  return rc;
}
