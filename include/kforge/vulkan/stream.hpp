// kforge/vulkan/stream.hpp — records ops into one command buffer, submits
// once, waits with a timeout, replays, and times every dispatch.
//
// Barriers only where data flows: the stream remembers which buffer ranges
// were read and written since the last barrier; a command that reads or
// writes a range written since then (RAW, WAW), or writes a range read since
// then (WAR), gets one global memory barrier first. Independent dispatches
// run without barriers between them.
//
// Waiting: wait() polls the fence for the context's spin() (20 ms on a GPU
// by default) before it sleeps in vkWaitForFences with the timeout.
//
// Submitting in parts: flush() submits what is recorded so far and goes on
// recording into a further command buffer, so the GPU runs the first ops of
// a long recording while the host records the rest (a model step records
// for a few hundred microseconds). The parts keep the recording's order and
// barriers (a barrier orders against everything earlier in submission
// order, across submissions); submit() sends the last part; wait() waits for
// all of them; a replay submits every part again, in one vkQueueSubmit.
//
// Timestamps: when the queue supports them, a timestamp is written at the
// start and the end of the recording (gpu_span_ms), and, after
// time_dispatches(true), before and after each dispatch and copy recorded
// from then on (up to 256 per recording); timings() turns them into
// milliseconds after wait() (no value for a command recorded untimed: a
// missing measurement is never a number). Off by
// default: on the H200 a timestamp pair costs ~4.2 µs of GPU time per
// dispatch (it waits for the dispatch to finish, so independent dispatches
// no longer overlap), against ~0.26 µs for an independent dispatch and
// ~2.7 µs for one behind a barrier (docs/bench/HISTORY.md, replay). Host calls
// (run() on host views) time theirs, for last_call_seconds().
//
// Temporaries a recording needs (staging areas, tensors made for one host
// call) are kept alive by the stream until reset() or destruction. Tensors
// passed in by the caller must outlive the submission.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <vulkan/vulkan.h>

#include <array>
#include <deque>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kforge/vulkan/context.hpp"

namespace kforge::vulkan {

/// One buffer a dispatch binds, and whether the dispatch writes it.
struct binding {
  buffer_ref ref;
  bool write = false;
};

struct dispatch_timing {
  std::string label;
  std::optional<double> ms;  // none: not timed (untimed recording, no timestamp support, or past max_timed)
  bool transfer = false;  // a copy() (vkCmdCopyBuffer: uploads, downloads), not a dispatch
};

class stream {
 public:
  static constexpr std::uint32_t max_timed = 256;

  explicit stream(context& ctx) : ctx_(&ctx) {
    ctx.ensure_usable();
    const auto& st = ctx.state();
    VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pi.queueFamilyIndex = ctx.queue_family();
    VkCommandPool pool;
    check(vkCreateCommandPool(st->device, &pi, nullptr, &pool), "vkCreateCommandPool");
    pool_ = device_owned(st, pool, vkDestroyCommandPool);
    add_part();
    cmd_ = parts_[0].cmd;
    if (ctx.info().timestamps) {
      VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
      qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
      qi.queryCount = 2 * max_timed + 2;  // + the recording's span (gpu_span_ms)
      VkQueryPool qp;
      check(vkCreateQueryPool(st->device, &qi, nullptr, &qp), "vkCreateQueryPool");
      queries_ = device_owned(st, qp, vkDestroyQueryPool);
    }
  }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  ~stream() {
    if (in_flight_ && !ctx_->lost()) {
      try {
        wait();
      } catch (...) {
      }
    }
  }

  context& ctx() const { return *ctx_; }

  /// Whether the dispatches and copies recorded from now on are timed
  /// (default: no; where the queue has no timestamps, never).
  void time_dispatches(bool on) { time_ = on; }

  /// Records one dispatch of `p` over `groups` workgroups.
  void dispatch(const pipeline& p, const std::vector<binding>& bufs, const void* push, std::uint32_t push_bytes,
                std::array<std::uint32_t, 3> groups, std::string label) {
    if (bufs.size() != p.bindings)
      throw interface_error("kforge::vulkan: dispatch of '" + p.name + "' binds " + std::to_string(bufs.size()) +
                            " buffers, the pipeline has " + std::to_string(p.bindings));
    if (push_bytes != p.push_bytes)
      throw interface_error("kforge::vulkan: dispatch of '" + p.name + "' pushes " + std::to_string(push_bytes) +
                            " bytes, the pipeline declares " + std::to_string(p.push_bytes));
    begin();
    std::vector<buffer_ref> reads, writes;
    for (const auto& b : bufs) (b.write ? writes : reads).push_back(b.ref);
    hazard(reads, writes);
    std::vector<VkDescriptorBufferInfo> infos(bufs.size());
    std::vector<VkWriteDescriptorSet> w(bufs.size());
    for (std::size_t i = 0; i < bufs.size(); ++i) {
      infos[i] = {bufs[i].ref.buffer, bufs[i].ref.offset, bufs[i].ref.size};
      w[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      w[i].dstBinding = static_cast<std::uint32_t>(i);
      w[i].descriptorCount = 1;
      w[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      w[i].pBufferInfo = &infos[i];
    }
    vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p.handle.get());
    ctx_->push_descriptor_fn()(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout.get(), 0,
                               static_cast<std::uint32_t>(w.size()), w.data());
    if (push_bytes) vkCmdPushConstants(cmd_, p.layout.get(), VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes, push);
    const bool timed = time_ && queries_ && timed_count_ < max_timed;
    const auto q = static_cast<std::uint32_t>(2 * timed_count_);
    if (timed) vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_.get(), q);
    if (groups[0] && groups[1] && groups[2]) vkCmdDispatch(cmd_, groups[0], groups[1], groups[2]);
    ++part_commands_;
    if (timed) vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries_.get(), q + 1);
    timed_count_ += timed;
    labels_.push_back({std::move(label), timed});
  }

  /// Records a device-to-device copy of `bytes` bytes.
  void copy(buffer_ref src, buffer_ref dst, VkDeviceSize bytes) {
    if (!bytes) return;
    begin();
    hazard({buffer_ref{src.buffer, src.offset, bytes}}, {buffer_ref{dst.buffer, dst.offset, bytes}});
    VkBufferCopy region{src.offset, dst.offset, bytes};
    const bool timed = time_ && queries_ && timed_count_ < max_timed;
    const auto q = static_cast<std::uint32_t>(2 * timed_count_);
    if (timed) vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_.get(), q);
    vkCmdCopyBuffer(cmd_, src.buffer, dst.buffer, 1, &region);
    ++part_commands_;
    if (timed) vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_TRANSFER_BIT, queries_.get(), q + 1);
    timed_count_ += timed;
    labels_.push_back({"copy " + std::to_string(bytes) + " B", timed, true});
    ++copies_;
  }

  /// Records a fill of `bytes` bytes at dst with the 32-bit `word`
  /// (vkCmdFillBuffer): zeroing a buffer without a staging upload. dst's
  /// offset and `bytes` must be multiples of 4 (argument_error otherwise).
  void fill(buffer_ref dst, VkDeviceSize bytes, std::uint32_t word = 0) {
    if (!bytes) return;
    if (dst.offset % 4 || bytes % 4)
      throw argument_error("kforge::vulkan::stream: fill() needs an offset and a size that are multiples of 4, got " +
                           std::to_string(dst.offset) + " and " + std::to_string(bytes));
    begin();
    hazard({}, {buffer_ref{dst.buffer, dst.offset, bytes}});
    const bool timed = time_ && queries_ && timed_count_ < max_timed;
    const auto q = static_cast<std::uint32_t>(2 * timed_count_);
    if (timed) vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_.get(), q);
    vkCmdFillBuffer(cmd_, dst.buffer, dst.offset, bytes, word);
    ++part_commands_;
    if (timed) vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_TRANSFER_BIT, queries_.get(), q + 1);
    timed_count_ += timed;
    labels_.push_back({"fill " + std::to_string(bytes) + " B", timed, true});
    ++copies_;
  }

  /// Adds a check that runs after every completed submission of this
  /// recording (in wait(), in the order added) and may throw: how an op
  /// reports what only the device could see, such as embedding's ids out of
  /// range in a device tensor. Dropped by reset().
  void check_after_wait(std::function<void()> check) { checks_.push_back(std::move(check)); }

  /// A host-visible staging area kept alive by the stream; write it before
  /// submit() (upload) or read it after wait() (download).
  buffer_slice& staging(VkDeviceSize bytes) {
    keep_.push_back(ctx_->staging_memory().allocate(bytes));
    return keep_.back();
  }
  /// Keeps a temporary alive until reset().
  buffer_slice& keep(buffer_slice&& s) {
    keep_.push_back(std::move(s));
    return keep_.back();
  }
  /// A device buffer of `bytes` that the commands of this recording share,
  /// one after another (the barriers above order a write of it after the
  /// reads before: a pass that needs a large temporary per call, such as the
  /// quantized gemm's dequantized weights, holds the largest one once per
  /// recording, not one per call). Grows when a call needs more (the smaller
  /// one is kept too, for the commands already recorded); dropped by reset().
  buffer_ref scratch(VkDeviceSize bytes) {
    if (!scratch_ || scratch_->ref().size < bytes) scratch_ = &keep(ctx_->device_memory().allocate(bytes));
    buffer_ref r = scratch_->ref();
    r.size = bytes;
    return r;
  }

  /// Ends recording (first time) and submits. A recorded stream can be
  /// submitted again after wait(): that is a replay (every part of it).
  void submit() {
    ctx_->ensure_usable();
    if (!recording_ && in_flight_)
      throw argument_error("kforge::vulkan::stream: submit() while the previous submission is in flight");
    if (!began_) begin();  // an empty recording still submits (and signals the fence)
    if (recording_) {
      VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
      mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
      vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                           VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
      if (queries_) vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_.get(), 2 * max_timed + 1);
      check(vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
      recording_ = false;
      send(current_, current_ + 1);
    } else {
      send(0, current_ + 1);  // a replay: every part, one submission
    }
    ++submits_;
  }

  /// Submits the commands recorded since the last flush (if any) and goes
  /// on recording into a new part: the GPU starts on them while the host
  /// records the rest. Only while recording (argument_error after submit()).
  void flush() {
    if (!recording_) {
      if (began_) throw argument_error("kforge::vulkan::stream: flush() after submit(); reset() before recording more");
      return;
    }
    if (!part_commands_) return;
    ctx_->ensure_usable();
    check(vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
    send(current_, current_ + 1);
    ++current_;
    if (current_ == parts_.size()) add_part();
    cmd_ = parts_[current_].cmd;
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    check(vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer");
    part_commands_ = 0;
    ++flushes_;
  }

  /// Waits for the submission (every part submitted); throws device_lost on
  /// VK_ERROR_DEVICE_LOST or when the context's timeout passes (the context
  /// is then abandoned).
  void wait() {
    if (!in_flight_) return;
    std::vector<VkFence> fs;
    for (auto& p : parts_)
      if (p.pending) fs.push_back(p.fence.get());
    if (const auto spin = ctx_->spin(); spin.count() > 0 && !fs.empty()) {
      // Poll the last part's fence (parts complete in submission order) before sleeping.
      const auto until = std::chrono::steady_clock::now() + spin;
      while (vkGetFenceStatus(ctx_->device(), fs.back()) == VK_NOT_READY && std::chrono::steady_clock::now() < until)
        std::this_thread::yield();
    }
    const auto ns = static_cast<std::uint64_t>(ctx_->timeout().count()) * 1000000ull;
    const VkResult r = vkWaitForFences(ctx_->device(), static_cast<std::uint32_t>(fs.size()), fs.data(), VK_TRUE, ns);
    for (auto& p : parts_) p.pending = false;
    if (r == VK_TIMEOUT || r == VK_ERROR_DEVICE_LOST) {
      ctx_->mark_lost();
      in_flight_ = false;
      throw device_lost("kforge::vulkan: " +
                        (r == VK_TIMEOUT ? "work on '" + ctx_->info().name + "' did not finish within " +
                                               std::to_string(ctx_->timeout().count()) + " ms"
                                         : std::string("VK_ERROR_DEVICE_LOST on '") + ctx_->info().name + "'") +
                        " (" + std::to_string(labels_.size()) + " dispatches in the submission" +
                        (labels_.empty() ? std::string() : ", first '" + labels_.front().label + "'") +
                        "); the context is abandoned: build a new one");
    }
    check(r, "vkWaitForFences");
    in_flight_ = false;
    if (recording_) return;  // parts flushed from a recording still going on: its checks run after submit()
    for (const auto& c : checks_) c();
  }

  /// submit() then wait().
  void run() {
    submit();
    wait();
  }

  /// Drops the recording and the temporaries; the stream can record anew.
  void reset() {
    wait();
    if (began_)
      for (std::size_t i = 0; i <= current_; ++i) check(vkResetCommandBuffer(parts_[i].cmd, 0), "vkResetCommandBuffer");
    current_ = 0;
    cmd_ = parts_[0].cmd;
    part_commands_ = 0;
    began_ = recording_ = false;
    labels_.clear();
    timed_count_ = 0;
    keep_.clear();
    scratch_ = nullptr;
    checks_.clear();
    reads_.clear();
    writes_.clear();
    barriers_ = copies_ = 0;
  }

  /// GPU time of each dispatch of the last completed submission.
  std::vector<dispatch_timing> timings() const {
    std::vector<dispatch_timing> out;
    std::vector<std::uint64_t> ts(2 * max_timed);
    std::size_t timed = 0;
    for (const auto& l : labels_) timed += l.timed;
    if (timed && submits_ && !in_flight_)
      check(vkGetQueryPoolResults(ctx_->device(), queries_.get(), 0, static_cast<std::uint32_t>(2 * timed),
                                  ts.size() * 8, ts.data(), 8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
            "vkGetQueryPoolResults");
    std::size_t slot = 0;
    for (std::size_t i = 0; i < labels_.size(); ++i) {
      dispatch_timing t{labels_[i].label, std::nullopt, labels_[i].transfer};
      if (labels_[i].timed && submits_ && !in_flight_)
        t.ms = static_cast<double>(ts[2 * slot + 1] - ts[2 * slot]) * ctx_->info().timestamp_period_ns * 1e-6;
      slot += labels_[i].timed;
      out.push_back(std::move(t));
    }
    return out;
  }

  /// GPU time from the start of the last completed submission's first
  /// command to the end of its last (gaps between dispatches, overlap and
  /// waits for later parts included); none where the queue has no
  /// timestamps, before the first submission or while one is in flight. Two
  /// timestamps per recording, written whether or not dispatches are timed.
  std::optional<double> gpu_span_ms() const {
    if (!queries_ || !submits_ || in_flight_) return std::nullopt;
    std::array<std::uint64_t, 2> ts{};
    check(vkGetQueryPoolResults(ctx_->device(), queries_.get(), 2 * max_timed, 2, sizeof ts, ts.data(), 8,
                                VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
          "vkGetQueryPoolResults");
    return static_cast<double>(ts[1] - ts[0]) * ctx_->info().timestamp_period_ns * 1e-6;
  }

  std::size_t dispatch_count() const { return labels_.size() - copies_; }
  std::size_t barrier_count() const { return barriers_; }
  std::size_t copy_count() const { return copies_; }
  std::size_t submit_count() const { return submits_; }
  /// flush() calls that submitted a part, since construction.
  std::size_t flush_count() const { return flushes_; }
  /// Commands recorded into the part not yet submitted.
  std::size_t part_commands() const { return part_commands_; }
  /// Parts of the current recording (1 + its flushes).
  std::size_t part_count() const { return began_ ? current_ + 1 : 0; }

 private:
  struct label_rec {
    std::string label;
    bool timed = false;
    bool transfer = false;
  };

  struct part {
    VkCommandBuffer cmd = VK_NULL_HANDLE;  // freed with the pool
    unique_handle<VkFence> fence;
    bool pending = false;  // submitted, not yet waited for
  };

  void add_part() {
    const auto& st = ctx_->state();
    part p;
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool_.get();
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    check(vkAllocateCommandBuffers(st->device, &ai, &p.cmd), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    check(vkCreateFence(st->device, &fi, nullptr, &fence), "vkCreateFence");
    p.fence = device_owned(st, fence, vkDestroyFence);
    parts_.push_back(std::move(p));
  }

  /// Submits parts [from, to) in one vkQueueSubmit, signalling the last one's fence.
  void send(std::size_t from, std::size_t to) {
    VkFence f = parts_[to - 1].fence.get();
    check(vkResetFences(ctx_->device(), 1, &f), "vkResetFences");
    std::vector<VkCommandBuffer> cmds;
    for (std::size_t i = from; i < to; ++i) cmds.push_back(parts_[i].cmd);
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = static_cast<std::uint32_t>(cmds.size());
    si.pCommandBuffers = cmds.data();
    const VkResult r = vkQueueSubmit(ctx_->queue(), 1, &si, f);
    if (r == VK_ERROR_DEVICE_LOST) ctx_->mark_lost();
    check(r, "vkQueueSubmit");
    parts_[to - 1].pending = true;
    in_flight_ = true;
  }

  void begin() {
    if (!recording_ && began_)
      throw argument_error("kforge::vulkan::stream: already submitted; reset() before recording more");
    if (began_) return;
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    check(vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer");
    if (queries_) {
      vkCmdResetQueryPool(cmd_, queries_.get(), 0, 2 * max_timed + 2);
      vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_.get(), 2 * max_timed);
    }
    began_ = recording_ = true;
  }

  static bool overlaps(const buffer_ref& a, const buffer_ref& b) {
    return a.buffer == b.buffer && a.offset < b.offset + b.size && b.offset < a.offset + a.size;
  }
  static bool any_overlap(const std::vector<buffer_ref>& xs, const std::vector<buffer_ref>& ys) {
    for (const auto& x : xs)
      for (const auto& y : ys)
        if (overlaps(x, y)) return true;
    return false;
  }
  void hazard(const std::vector<buffer_ref>& reads, const std::vector<buffer_ref>& writes) {
    if (any_overlap(reads, writes_) || any_overlap(writes, writes_) || any_overlap(writes, reads_)) {
      VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT |
                         VK_ACCESS_TRANSFER_READ_BIT;
      mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                         VK_ACCESS_TRANSFER_WRITE_BIT;
      const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
      vkCmdPipelineBarrier(cmd_, stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
      ++barriers_;
      reads_.clear();
      writes_.clear();
    }
    reads_.insert(reads_.end(), reads.begin(), reads.end());
    writes_.insert(writes_.end(), writes.begin(), writes.end());
  }

  context* ctx_;
  unique_handle<VkCommandPool> pool_;
  std::deque<part> parts_;                // deque: add_part keeps the others in place
  std::size_t current_ = 0;               // the part being recorded (or the last one, once submitted)
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;  // parts_[current_].cmd
  std::size_t part_commands_ = 0;         // commands recorded into the current part
  unique_handle<VkQueryPool> queries_;
  bool began_ = false, recording_ = false, in_flight_ = false, time_ = false;
  std::size_t timed_count_ = 0;
  std::vector<label_rec> labels_;
  std::deque<buffer_slice> keep_;  // deque: references handed out stay valid
  buffer_slice* scratch_ = nullptr;  // the largest scratch() so far, in keep_
  std::vector<std::function<void()>> checks_;
  std::vector<buffer_ref> reads_, writes_;
  std::size_t barriers_ = 0, copies_ = 0, submits_ = 0, flushes_ = 0;
};

}  // namespace kforge::vulkan
