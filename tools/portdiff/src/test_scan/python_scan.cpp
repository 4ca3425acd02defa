#include "test_scan/python_scan.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

namespace portdiff {
namespace {

struct Scope final {
  std::size_t indent;
  bool is_class;
  std::string name;
  std::size_t start;  // first decorator, or the def/class line
};

/// Tokenizer state carried from one physical line to the next.
struct LexState final {
  char quote = 0;  // open string's quote character, 0 outside strings
  bool triple = false;
  int brackets = 0;
  bool backslash = false;  // line ended in a backslash continuation

  bool continues() const { return quote != 0 || brackets > 0 || backslash; }
};

bool is_identifier_byte(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}

/// If `text` starts with `keyword` followed by whitespace, returns the rest after
/// the whitespace; otherwise an empty view.
std::string_view after_keyword(std::string_view text, std::string_view keyword) {
  if (text.substr(0, keyword.size()) != keyword || text.size() == keyword.size()) return {};
  if (text[keyword.size()] != ' ' && text[keyword.size()] != '\t') return {};
  text.remove_prefix(keyword.size());
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  return text;
}

std::string identifier_at(std::string_view text) {
  std::size_t n = 0;
  while (n < text.size() && is_identifier_byte(text[n])) ++n;
  return std::string(text.substr(0, n));
}

/// Advances the tokenizer over one physical line (including its '\n').
void lex_line(std::string_view line, LexState& state) {
  state.backslash = false;
  std::size_t i = 0;
  while (i < line.size()) {
    const char c = line[i];
    if (state.quote != 0) {
      if (c == '\\') {
        i += 2;  // an escape (or, in raw strings, a backslash that still hides the quote)
      } else if (c == state.quote && (!state.triple || line.substr(i, 3) == std::string(3, c))) {
        i += state.triple ? 3 : 1;
        state.quote = 0;
      } else if (c == '\n' && !state.triple) {
        state.quote = 0;  // unterminated single-quoted string: the line ends it
        ++i;
      } else {
        ++i;
      }
      continue;
    }
    if (c == '#') return;
    if (c == '\'' || c == '"') {
      state.quote = c;
      state.triple = line.substr(i, 3) == std::string(3, c);
      i += state.triple ? 3 : 1;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') ++state.brackets;
    if ((c == ')' || c == ']' || c == '}') && state.brackets > 0) --state.brackets;
    if (c == '\\' && (line.substr(i + 1) == "\n" || line.substr(i + 1) == "\r\n")) {
      state.backslash = true;
      return;
    }
    ++i;
  }
}

}  // namespace

std::vector<PyTestFunction> scan_test_functions(std::string_view source) {
  std::vector<std::pair<std::size_t, PyTestFunction>> found;  // (start, function)
  std::vector<Scope> scopes;
  LexState state;
  std::size_t decorator_start = std::string_view::npos;
  std::size_t last_code_end = 0;  // end of the last line that belongs to a logical line

  const auto close_scope = [&] {
    Scope scope = std::move(scopes.back());
    scopes.pop_back();
    const bool in_classes_only =
        std::all_of(scopes.begin(), scopes.end(), [](const Scope& s) { return s.is_class; });
    if (scope.is_class || !in_classes_only || scope.name.compare(0, 4, "test") != 0) return;
    std::string qualified;
    for (const Scope& s : scopes) qualified += s.name + ".";
    qualified += scope.name;
    found.push_back({scope.start,
                     {std::move(qualified),
                      std::string(source.substr(scope.start, last_code_end - scope.start))}});
  };

  std::size_t pos = 0;
  while (pos < source.size()) {
    std::size_t end = source.find('\n', pos);
    end = end == std::string_view::npos ? source.size() : end + 1;
    const std::string_view line = source.substr(pos, end - pos);

    if (state.continues()) {
      lex_line(line, state);
      last_code_end = end;
      pos = end;
      continue;
    }

    // Indentation as Python measures it: tabs to the next multiple of 8.
    std::size_t column = 0, i = 0;
    for (; i < line.size(); ++i) {
      if (line[i] == ' ')
        ++column;
      else if (line[i] == '\t')
        column = (column / 8 + 1) * 8;
      else if (line[i] != '\f')
        break;
    }
    const std::string_view code = line.substr(i);
    const bool blank =
        code.empty() || code[0] == '#' || code[0] == '\n' || code.substr(0, 2) == "\r\n";
    if (!blank) {
      while (!scopes.empty() && column <= scopes.back().indent) close_scope();

      const std::size_t start = decorator_start == std::string_view::npos ? pos : decorator_start;
      std::string_view rest = after_keyword(code, "async");
      rest = after_keyword(rest.empty() ? code : rest, "def");
      if (code[0] == '@') {
        if (decorator_start == std::string_view::npos) decorator_start = pos;
      } else if (!rest.empty()) {
        scopes.push_back({column, false, identifier_at(rest), start});
        decorator_start = std::string_view::npos;
      } else if (!(rest = after_keyword(code, "class")).empty()) {
        scopes.push_back({column, true, identifier_at(rest), start});
        decorator_start = std::string_view::npos;
      } else {
        decorator_start = std::string_view::npos;
      }
      lex_line(line, state);
      last_code_end = end;
    }
    pos = end;
  }
  while (!scopes.empty()) close_scope();

  // Python keeps the last definition of a name; report in source order.
  std::unordered_map<std::string, std::size_t> last_index;
  for (std::size_t k = 0; k < found.size(); ++k) last_index[found[k].second.qualified_name] = k;
  std::vector<std::pair<std::size_t, PyTestFunction>> kept;
  for (std::size_t k = 0; k < found.size(); ++k)
    if (last_index[found[k].second.qualified_name] == k) kept.push_back(std::move(found[k]));
  std::sort(kept.begin(), kept.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<PyTestFunction> result;
  result.reserve(kept.size());
  for (auto& entry : kept) result.push_back(std::move(entry.second));
  return result;
}

}  // namespace portdiff
