// Moves the dense matrices that linear ops read on every token out of the
// model's file mapping into private memory. Generation streams every such
// matrix once per token, and on the machines in bench/README.md it streams
// them 10-20% faster from fresh anonymous memory than from the page cache
// (llama.cpp with --no-mmap gains alike). The copy is made once, at load.
#pragma once

#include "base/thread_pool.h"
#include "io/weight_store.h"
#include "ir/program.h"

namespace anelm {

// Copies every unquantized weight that a linear node reads, and that still
// points into `source`'s own storage, into one huge-page buffer the program
// then owns; the mapped pages copied from leave the resident set as each
// piece is done, so the peak stays near one copy of the weights.
void copy_streamed_weights(ir::Program& program, const WeightStore& source, ThreadPool& pool);

}  // namespace anelm
