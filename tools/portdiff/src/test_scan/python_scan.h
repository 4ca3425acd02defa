#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace portdiff {

/// A test function found in Python source: its qualified name (`Class.Inner.test_x`
/// or `test_x`) and its bytes, from its first decorator to the end of its last
/// non-blank, non-comment line (including that line's '\n', if any).
struct PyTestFunction final {
  std::string qualified_name;
  std::string body;
};

/*
 * The test-function scanner: a small line-oriented Python tokenizer, not a parser.
 * It tracks strings (single, triple, any prefix), comments, brackets and backslash
 * continuations, so only real logical lines are looked at; "def test_" inside a
 * string or comment is text. A scope stack of `def`/`class` by indentation gives
 * the qualified names. Recorded: functions (`def`, `async def`, decorated or not)
 * whose name starts with "test" and whose enclosing scopes are all classes —
 * module-level tests and test methods, as pytest and unittest collect them. Nested
 * functions and classes inside functions are skipped. A name defined twice keeps
 * its last definition, as Python does. Results are in source order.
 */
std::vector<PyTestFunction> scan_test_functions(std::string_view source);

}  // namespace portdiff
