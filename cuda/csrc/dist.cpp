// dist.cpp: the process group of pfl_api.pg_* (pfl.h), libtorch's c10d used directly:
// a TCPStore for the rendezvous and ProcessGroupGloo (CPU tensors) or ProcessGroupNCCL
// (CUDA tensors) for the collectives. pfl builds no transport of its own.
//
// PFL_WITH_GLOO and PFL_WITH_NCCL say which backends this build has (CMakeLists.txt sets
// them when the headers are there); a backend that is missing answers
// PFL_ERR_NOT_IMPLEMENTED from pg_new, so the rest of the library builds without either.
#include "internal.h"

#include <chrono>
#include <map>
#include <memory>
#include <thread>

#ifndef PFL_WITH_GLOO
#define PFL_WITH_GLOO 0
#endif
#ifndef PFL_WITH_NCCL
#define PFL_WITH_NCCL 0
#endif

#if PFL_WITH_GLOO || PFL_WITH_NCCL
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif
#if PFL_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if PFL_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

using namespace pfl;

namespace {

// Group is the part of a c10d process group pfl calls. The backends are held by their own
// types: in libtorch 1.13 they derive from c10d::ProcessGroup, in 2.x from c10d::Backend,
// and both spell these four collectives the same way.
struct Group {
  virtual ~Group() = default;
  virtual void all_reduce(std::vector<at::Tensor> &ts) = 0;
  virtual void broadcast(std::vector<at::Tensor> &ts, int root) = 0;
  virtual void all_gather(std::vector<at::Tensor> &out, std::vector<at::Tensor> &in) = 0;
  virtual void barrier() = 0;
};

template <class PG>
struct GroupOf : Group {
  c10::intrusive_ptr<PG> pg;
  std::chrono::milliseconds timeout;
  GroupOf(c10::intrusive_ptr<PG> p, std::chrono::milliseconds t) : pg(std::move(p)), timeout(t) {}

  // wait waits for w at most the group's timeout: a collective whose peer never answers
  // is an error, not a hang (Work::wait throws on a failed or timed-out collective).
  template <class W>
  void wait(W &&w) {
    if (!w->wait(timeout)) throw std::runtime_error("collective did not finish in time");
  }
  void all_reduce(std::vector<at::Tensor> &ts) override {
    c10d::AllreduceOptions o;
    o.reduceOp = c10d::ReduceOp::SUM;
    o.timeout = timeout;
    wait(pg->allreduce(ts, o));
  }
  void broadcast(std::vector<at::Tensor> &ts, int root) override {
    c10d::BroadcastOptions o;
    o.rootRank = root;
    o.timeout = timeout;
    wait(pg->broadcast(ts, o));
  }
  void all_gather(std::vector<at::Tensor> &out, std::vector<at::Tensor> &in) override {
    std::vector<std::vector<at::Tensor>> outs{out};
    c10d::AllgatherOptions o;
    o.timeout = timeout;
    wait(pg->allgather(outs, in, o));
  }
  void barrier() override {
    c10d::BarrierOptions o;
    o.timeout = timeout;
    wait(pg->barrier(o));
  }
};

}  // namespace

struct pfl_pg_s {
#if PFL_WITH_GLOO || PFL_WITH_NCCL
  c10::intrusive_ptr<c10d::Store> store;  // outlives the group, which reads it while it lives
#endif
  std::unique_ptr<Group> group;
  at::Device device = at::kCPU;
  int rank = 0, world = 1;
};

namespace {

Group &group_of(pfl_pg pg) {
  if (!pg || !pg->group) throw ArgError("null or closed process group");
  return *pg->group;
}

// tensors unwraps n handles and checks that each is dense and on the group's device
// (c10d's own checks would say so too, but after the other ranks have entered the call).
std::vector<at::Tensor> tensors(pfl_pg pg, const pfl_tensor *ts, int32_t n) {
  if (n < 0 || (n > 0 && !ts)) throw ArgError("bad tensor list");
  std::vector<at::Tensor> out;
  out.reserve(n);
  for (int32_t i = 0; i < n; ++i) {
    const at::Tensor &t = unwrap(ts[i], "tensor");
    if (t.device() != pg->device)
      throw ArgError("tensor " + std::to_string(i) + " is on " + t.device().str() +
                     ", the process group on " + pg->device.str());
    if (t.layout() != at::kStrided) throw ArgError("tensor " + std::to_string(i) + " is not dense");
    out.push_back(t);
  }
  return out;
}

// by_dtype groups the positions of ts by dtype (in first-seen order, the same on every
// rank when the ranks pass the same list), one coalesced buffer per group.
std::vector<std::vector<size_t>> by_dtype(const std::vector<at::Tensor> &ts) {
  std::vector<std::vector<size_t>> groups;
  std::vector<at::ScalarType> seen;
  for (size_t i = 0; i < ts.size(); ++i) {
    size_t g = 0;
    while (g < seen.size() && seen[g] != ts[i].scalar_type()) ++g;
    if (g == seen.size()) {
      seen.push_back(ts[i].scalar_type());
      groups.emplace_back();
    }
    groups[g].push_back(i);
  }
  return groups;
}

// coalesced runs f on one flat buffer per dtype holding ts's values in order, then copies
// the buffer back into ts (the tensors are changed in place, whatever their strides).
template <class F>
void coalesced(std::vector<at::Tensor> &ts, F f) {
  at::NoGradGuard no_grad;
  for (auto &idx : by_dtype(ts)) {
    std::vector<at::Tensor> flat;
    flat.reserve(idx.size());
    for (size_t i : idx) flat.push_back(ts[i].reshape({-1}));
    std::vector<at::Tensor> buf{at::cat(flat)};
    f(buf);
    int64_t off = 0;
    for (size_t i : idx) {
      int64_t n = ts[i].numel();
      ts[i].copy_(buf[0].narrow(0, off, n).view(ts[i].sizes()));
      off += n;
    }
  }
}

// Deadline is one budget for the steps of joining. Each step of c10d has its own timeout
// (connecting to the store, the store's wait for the workers, Gloo's exchange of addresses,
// each Gloo connection), and given the whole timeout each, they add up to several times
// it; the store and the wait for every rank take what is left of one deadline instead.
struct Deadline {
  std::chrono::steady_clock::time_point end;
  std::chrono::milliseconds total;
  explicit Deadline(std::chrono::milliseconds t) : end(std::chrono::steady_clock::now() + t), total(t) {}
  // left is the time left for step; none left is an error naming the step.
  std::chrono::milliseconds left(const char *step) const {
    auto l = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (l.count() <= 0)
      throw std::runtime_error(std::string("timed out (") + std::to_string(total.count()) + " ms) before " + step);
    return l;
  }
};

#if PFL_WITH_GLOO || PFL_WITH_NCCL
// await_ranks announces rank in the store and waits until all world ranks have, so that a
// rank that never comes is named: otherwise the first sign of it is a timeout deep in the
// backend's own rendezvous, which says neither which rank nor which step.
void await_ranks(c10d::Store &store, int rank, int world, const Deadline &dl) {
  std::vector<std::string> keys;
  for (int r = 0; r < world; ++r) keys.push_back("pfl/joined/" + std::to_string(r));
  store.set(keys[rank], std::vector<uint8_t>{1});
  while (!store.check(keys)) {
    if (std::chrono::steady_clock::now() >= dl.end) {
      std::string names;
      int n = 0;
      for (int r = 0; r < world; ++r)
        if (!store.check({keys[r]})) names += (n++ ? ", " : "") + std::to_string(r);
      if (n == 0) return;  // the last came at the last moment
      throw std::runtime_error((n == 1 ? "rank " : "ranks ") + names + " did not join within " +
                               std::to_string(dl.total.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}
#endif

#if PFL_WITH_GLOO
// gloo_devices is the Gloo TCP devices of a group: one per interface of ifaces (a
// comma-separated list, GLOO_SOCKET_IFNAME's form), else one bound to the address local,
// else the address the hostname resolves to (c10d's default, loopback on many machines).
std::vector<std::shared_ptr<::gloo::transport::Device>> gloo_devices(const std::string &ifaces,
                                                                     const std::string &local) {
  std::vector<std::shared_ptr<::gloo::transport::Device>> out;
  size_t from = 0;
  while (from <= ifaces.size() && !ifaces.empty()) {
    size_t to = ifaces.find(',', from);
    if (to == std::string::npos) to = ifaces.size();
    std::string name = ifaces.substr(from, to - from);
    if (name.empty()) throw ArgError("empty interface name in \"" + ifaces + "\"");
    out.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(name));
    from = to + 1;
  }
  if (out.empty())
    out.push_back(local.empty() ? c10d::ProcessGroupGloo::createDefaultDevice()
                                : c10d::ProcessGroupGloo::createDeviceForHostname(local));
  return out;
}
#endif

}  // namespace

extern "C" {

int32_t pfl_pg_new_on(const char *host, int32_t port, int32_t rank, int32_t world, int64_t timeout_ms,
                      int32_t device_type, int32_t device_index, const char *ifaces, const char *local,
                      pfl_pg *out, pfl_status *st) {
  PFL_TRY
  if (!out) throw ArgError("null output");
  *out = nullptr;
  if (!host || !*host) throw ArgError("empty master address");
  if (port <= 0 || port > 65535) throw ArgError("port " + std::to_string(port) + " out of range");
  if (world < 1 || rank < 0 || rank >= world)
    throw ArgError("rank " + std::to_string(rank) + " of world size " + std::to_string(world));
  if (timeout_ms <= 0) throw ArgError("timeout must be positive");
  std::string ifs = ifaces ? ifaces : "", loc = local ? local : "";
  at::Device dev = to_device(device_type, device_index);
  auto pg = std::make_unique<pfl_pg_s>();
  pg->device = dev;
  pg->rank = rank;
  pg->world = world;
  std::chrono::milliseconds timeout(timeout_ms);
  Deadline dl(timeout);
#if PFL_WITH_GLOO || PFL_WITH_NCCL
  c10d::TCPStoreOptions so;
  so.port = static_cast<uint16_t>(port);
  so.isServer = rank == 0;
  so.numWorkers = static_cast<size_t>(world);
  so.waitWorkers = false;  // await_ranks waits, naming the ranks that do not come
  // c10d counts the connect timeout in whole seconds, truncated, and retries a refused
  // connection once a second while a second is left: what is left of the deadline, rounded
  // down, would give up a second early (at once for a timeout under 2 s) when rank 0 starts
  // listening a moment after the others try; rounded up it overshoots by less than a second.
  so.timeout = std::chrono::ceil<std::chrono::seconds>(dl.left("connecting to the store"));
  pg->store = c10::make_intrusive<c10d::TCPStore>(std::string(host), so);
  await_ranks(*pg->store, rank, world, dl);
  // the backend's rendezvous reads the store with the store's timeout
  pg->store->setTimeout(dl.left("the backend's rendezvous"));
#endif
  if (dev.is_cpu()) {
#if PFL_WITH_GLOO
    // Gloo's contexts keep this timeout for every collective they run (libtorch 1.13 hands
    // Gloo no timeout per collective), so it is the whole timeout, not what is left of the
    // join's: the connections made here, after every rank has joined, may take longer than
    // the deadline only on a link lost at this moment, and the caller bounds the whole call.
    dl.left("connecting Gloo");
    auto o = c10d::ProcessGroupGloo::Options::create(timeout);
    o->devices = gloo_devices(ifs, loc);
    pg->group = std::make_unique<GroupOf<c10d::ProcessGroupGloo>>(
        c10::make_intrusive<c10d::ProcessGroupGloo>(pg->store, rank, world, o), timeout);
#else
    TORCH_CHECK_NOT_IMPLEMENTED(false, "pfl native library was built without Gloo (libgloo-dev)");
#endif
  } else {
#if PFL_WITH_NCCL
    auto o = c10d::ProcessGroupNCCL::Options::create();
    o->timeout = timeout;
    pg->group = std::make_unique<GroupOf<c10d::ProcessGroupNCCL>>(
        c10::make_intrusive<c10d::ProcessGroupNCCL>(pg->store, rank, world, o), timeout);
#else
    TORCH_CHECK_NOT_IMPLEMENTED(false, "pfl native library was built without NCCL");
#endif
  }
  *out = pg.release();
  PFL_CATCH(st, "pg_new")
}

int32_t pfl_pg_new(const char *host, int32_t port, int32_t rank, int32_t world, int64_t timeout_ms,
                   int32_t device_type, int32_t device_index, pfl_pg *out, pfl_status *st) {
  return pfl_pg_new_on(host, port, rank, world, timeout_ms, device_type, device_index, "", "", out, st);
}

int32_t pfl_pg_all_reduce(pfl_pg pg, const pfl_tensor *ts, int32_t n, pfl_status *st) {
  PFL_TRY
  ensure_threads();
  Group &g = group_of(pg);
  auto t = tensors(pg, ts, n);
  coalesced(t, [&](std::vector<at::Tensor> &buf) { g.all_reduce(buf); });
  PFL_CATCH(st, "all_reduce")
}

int32_t pfl_pg_broadcast(pfl_pg pg, const pfl_tensor *ts, int32_t n, int32_t root, pfl_status *st) {
  PFL_TRY
  ensure_threads();
  Group &g = group_of(pg);
  if (root < 0 || root >= pg->world)
    throw ArgError("root " + std::to_string(root) + " of world size " + std::to_string(pg->world));
  auto t = tensors(pg, ts, n);
  coalesced(t, [&](std::vector<at::Tensor> &buf) { g.broadcast(buf, root); });
  PFL_CATCH(st, "broadcast")
}

int32_t pfl_pg_all_gather(pfl_pg pg, pfl_tensor out, pfl_tensor in, pfl_status *st) {
  PFL_TRY
  ensure_threads();
  Group &g = group_of(pg);
  pfl_tensor both[2] = {out, in};
  auto t = tensors(pg, both, 2);
  at::Tensor &o = t[0], &x = t[1];
  if (o.dim() != x.dim() + 1 || o.size(0) != pg->world || !o.sizes().slice(1).equals(x.sizes()))
    throw ArgError("all_gather wants out [" + std::to_string(pg->world) + ", " +
                   c10::str(x.sizes()) + "], got " + c10::str(o.sizes()));
  if (o.scalar_type() != x.scalar_type()) throw ArgError("all_gather: out and in differ in dtype");
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> in_v{x.contiguous()};
  std::vector<at::Tensor> rows;
  at::Tensor buf = o.is_contiguous() ? o : at::empty_like(o, at::MemoryFormat::Contiguous);
  for (int r = 0; r < pg->world; ++r) rows.push_back(buf.select(0, r));
  g.all_gather(rows, in_v);
  if (!buf.is_same(o)) o.copy_(buf);
  PFL_CATCH(st, "all_gather")
}

int32_t pfl_pg_barrier(pfl_pg pg, pfl_status *st) {
  PFL_TRY
  group_of(pg).barrier();
  PFL_CATCH(st, "barrier")
}

void pfl_pg_free(pfl_pg pg) {
  if (!pg) return;
  try {
    delete pg;
  } catch (...) {
    // A group whose peers are gone may throw while shutting down; nothing to report to.
  }
}

}  // extern "C"
