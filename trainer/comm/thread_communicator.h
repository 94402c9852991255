// A world of N ranks inside one process, one thread per rank: the in-process multi-rank tests of the
// model-parallel head (and anything else that wants several ranks without mpirun).
//
//   auto world = make_thread_world(3);          // world[r] is rank r's communicator
//   std::vector<std::thread> t; for r: t.emplace_back([&, r] { run_rank(*world[r]); });
//
// Every collective is a rendezvous: each rank posts its buffers, waits for all ranks, computes its own
// result by reading the others' buffers in rank order (so sums are bitwise the same on every rank and
// equal to rank0 + rank1 + ... evaluated left to right), waits again, then writes its result; nothing is
// copied through a shared scratch. A rank that never arrives blocks the others (tests only: there is no
// timeout). local_rank() == rank(), local_size() == world size. Errors: as Communicator's.
#pragma once

#include <memory>
#include <vector>

#include "trainer/comm/communicator.h"

namespace fastnn {

std::vector<std::unique_ptr<Communicator>> make_thread_world(int world_size);

}  // namespace fastnn
