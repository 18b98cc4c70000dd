#include "state_dict_pickle.hpp"

#include <cstdint>
#include <cstring>
#include <set>
#include <string_view>
#include <vector>

namespace gputrain::train {
namespace {

// Bytes of argument after an opcode: fixed, or a length of `prefix` bytes then that many.
struct Argument {
  int fixed = 0;
  int prefix = 0;
  int lines = 0;  // newline-terminated arguments (GLOBAL has two)
};

bool among(unsigned char op, std::string_view ops) { return ops.find(static_cast<char>(op)) != std::string_view::npos; }

// Protocol 2's opcodes, and protocol 4's few that torch.save's files could hold and that change
// nothing here (FRAME, MEMOIZE, the short and long unicode strings).
std::optional<Argument> argument_of(unsigned char op) {
  if (among(op, "(.012N\x88\x89)t\x85\x86\x87]ae}suRbQld\x81\x94")) return Argument{};
  if (among(op, "Kqh\x80\x82")) return Argument{1};
  if (among(op, "M\x83")) return Argument{2};
  if (among(op, "Jrj\x84")) return Argument{4};
  if (among(op, "G\x95")) return Argument{8};
  if (among(op,
            "U\x8a"
            "C\x8c"))
    return Argument{0, 1};
  if (among(op,
            "XT\x8b"
            "B"))
    return Argument{0, 4};
  if (among(op, "\x8d\x8e")) return Argument{0, 8};
  if (among(op, "ILSVFpgP")) return Argument{0, 0, 1};
  if (among(op, "ci")) return Argument{0, 0, 2};
  return std::nullopt;
}

// How an opcode changes the stack: items popped (-1: down to the last MARK, which goes too, -2:
// down to it, the item below staying) and pushed.
struct Effect {
  int pop = 0;
  int push = 0;
  bool mark = false;
};

Effect effect_of(unsigned char op) {
  if (op == '(') return {0, 0, true};
  if (among(op, "tld")) return {-1, 1};
  if (among(op, "eu")) return {-2, 0};
  if (among(op, "\x85Q")) return {1, 1};
  if (among(op, "\x86R\x81")) return {2, 1};
  if (op == 0x87) return {3, 1};
  if (among(op, "ab0")) return {1, 0};
  if (op == 's') return {2, 0};
  if (among(op, "qr\x80\x95.\x94p")) return {0, 0};
  return {0, 1};  // everything else pushes one value
}

std::uint64_t little_endian(const unsigned char* bytes, int count) {
  std::uint64_t value = 0;
  for (int i = count - 1; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

// Applies `effect` to the stack of item starts; false when it pops what is not there.
template <typename Stack>
bool follow(Stack& stack, const Effect& effect, std::size_t here) {
  if (effect.mark) {
    stack.push_back({here, true});
    return true;
  }
  if (effect.pop < 0) {  // down to the MARK: a new item there (TUPLE), or the item below it kept (SETITEMS)
    while (!stack.empty() && !stack.back().mark) stack.pop_back();
    if (stack.empty()) return false;
    if (effect.pop == -1)
      stack.back().mark = false;
    else
      stack.pop_back();
    return true;
  }
  std::size_t start = here;
  for (int i = 0; i < effect.pop; ++i) {
    if (stack.empty() || stack.back().mark) return false;
    start = stack.back().start;
    stack.pop_back();
  }
  for (int i = 0; i < effect.push; ++i) stack.push_back({start, false});
  return true;
}

}  // namespace

std::optional<std::string> ordered_dicts_as_dicts(std::string_view pickle, unsigned char* unknown_opcode) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(pickle.data());
  std::string out;
  out.reserve(pickle.size());
  std::set<std::uint64_t> ordered_dict_memos;  // memo slots that hold the OrderedDict class
  int pending = 0;                             // 1: an OrderedDict class was met (an empty dict stands for it), 2: and its argument tuple
  // Where in `out` each stack item (or MARK) starts, to find a BUILD's state.
  struct Item {
    std::size_t start;
    bool mark;
  };
  std::vector<Item> stack;
  std::size_t at = 0;
  while (at < pickle.size()) {
    const unsigned char op = bytes[at];
    const auto argument = argument_of(op);
    if (!argument) {
      if (unknown_opcode) *unknown_opcode = op;
      return std::nullopt;
    }
    std::size_t end = at + 1 + static_cast<std::size_t>(argument->fixed);
    if (argument->prefix) {  // a length, then that many bytes: either may run past the end
      end += static_cast<std::size_t>(argument->prefix);
      if (end > pickle.size()) return std::nullopt;
      const std::uint64_t length = little_endian(bytes + at + 1, argument->prefix);
      if (length > pickle.size() - end) return std::nullopt;
      end += static_cast<std::size_t>(length);
    }
    for (int line = 0; line < argument->lines; ++line) {
      // npos + 1 is 0: a line that never ends must stop here, not search again from the start
      end = pickle.find('\n', end) + 1;
      if (end == 0) return std::nullopt;
    }
    if (end > pickle.size()) return std::nullopt;  // cut short
    const auto whole = pickle.substr(at, end - at);
    // LibTorch's unpickler makes room for every memo slot up to a PUT's: a 1 kB file whose
    // LONG_BINPUT says slot 1.7e9 asked for 27 GB. Python numbers slots 0, 1, 2, ..., one an object.
    if (op == 'r' && little_endian(bytes + at + 1, 4) > pickle.size()) return std::nullopt;
    const bool get = op == 'h' || op == 'j';
    const std::size_t here = out.size();
    auto effect = effect_of(op);
    if (whole == "ccollections\nOrderedDict\n" || (get && ordered_dict_memos.count(little_endian(bytes + at + 1, op == 'h' ? 1 : 4)))) {
      out += '}';  // OrderedDict(): an empty dict where the class was, so memo slots stay numbered as written
      pending = 1;
    } else if ((op == 'q' || op == 'r') && pending == 1) {
      ordered_dict_memos.insert(little_endian(bytes + at + 1, op == 'q' ? 1 : 4));
      out += whole;
    } else if (op == ')' && pending == 1) {
      pending = 2, effect = {};  // the empty argument tuple and the REDUCE are dropped
    } else if (op == 'R' && pending == 2) {
      pending = 0, effect = {};
    } else if (op == 'b') {
      // An OrderedDict's state (its _metadata): kept as an entry of the dict, which the unpickler
      // takes, where BUILD would need a class. The entry's key goes before the state.
      if (stack.empty() || stack.back().mark) return std::nullopt;
      out.insert(stack.back().start,
                 std::string("X") + std::string(1, char(sizeof kBuildStateKey - 1)) + std::string(3, '\0') + kBuildStateKey);
      out += 's';
    } else {
      out += whole;
      pending = 0;
    }
    if (!follow(stack, effect, here)) return std::nullopt;
    at = end;
  }
  return out;
}

}  // namespace gputrain::train
