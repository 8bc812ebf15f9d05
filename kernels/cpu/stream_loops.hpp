// The STREAM loops over one thread's range of the arrays. Compiled at -O3 as separate functions
// with per-ISA clones (selected at load time by the CPU), so the project needs no -march flag.
// The "_nt" forms write with non-temporal stores (AVX-512 only): for working sets far larger than
// the last-level cache they skip the read-for-ownership of the destination.
#pragma once

#include <cstddef>

namespace truepeak::cpu {

void stream_copy(double* c, const double* a, std::size_t n);
void stream_scale(double* b, const double* c, double q, std::size_t n);
void stream_add(double* c, const double* a, const double* b, std::size_t n);
void stream_triad(double* a, const double* b, const double* c, double q, std::size_t n);
// In place: c[i] = -c[i].
void stream_update(double* c, std::size_t n);

// True when this CPU can run the non-temporal forms.
bool stream_nt_available();
// Destination must be 64-byte aligned.
void stream_copy_nt(double* c, const double* a, std::size_t n);
void stream_scale_nt(double* b, const double* c, double q, std::size_t n);
void stream_add_nt(double* c, const double* a, const double* b, std::size_t n);
void stream_triad_nt(double* a, const double* b, const double* c, double q, std::size_t n);

}  // namespace truepeak::cpu
