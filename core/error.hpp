// Error types shared by every part of truepeak. Library code throws; only cli/ turns an
// exception into an exit code (InputError -> 2, everything else -> 1).
#pragma once

#include <stdexcept>
#include <string>

namespace truepeak {

// A failure at run time: a library call failed, a kernel produced wrong output, ...
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input from the user: flags, profile files, model files. The message is one line that says
// what, where and why. The command line exits 2 on it.
class InputError : public Error {
 public:
  using Error::Error;
};

// A backend cannot run this problem here (dtype not supported by the library on this ISA, no
// device, ...). The calibrate driver records it as a `skipped` entry with this reason.
class Unsupported : public Error {
 public:
  using Error::Error;
};

// A kernel's output did not match its reference: its time must not be trusted.
class CheckFailed : public Error {
 public:
  using Error::Error;
};

}  // namespace truepeak
