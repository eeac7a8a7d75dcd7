// SPDX-License-Identifier: MIT
// What realize does for a plan that holds collectives (lt::dist, items/collective_item.hpp):
//   - the order: each collective, with what it needs, moves as early as the graph allows, so that
//     it is in flight while the rest runs (a gradient's all-reduce during the backward pass);
//   - the agreement: before the first collective starts, the ranks compare what they are about
//     to do, so that a mismatch is an error on every rank instead of a hang (MPI matches
//     collectives by order alone); a rank that failed before that point says so there;
//   - the waits: a collective in flight is finished before the first item that reads it.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "../core/communicator.hpp"
#include "../items/items.hpp"

namespace lazytensor::detail {

/// The groups whose collectives the graph holds (not yet realized), in first-use order.
template <class Nodes>
std::vector<int> collective_groups(const Nodes& nodes) {
    std::vector<int> groups;
    for (const Node* n : nodes)
        if (n->kind == NodeKind::Collective && !n->realized()) {
            const int g = static_cast<int>(n->params[1]);
            if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
        }
    return groups;
}

/// LAZYTENSOR_DIST_CHECK=0 turns the agreement off (one small all-reduce per realize that holds
/// collectives): ranks that then differ meet MPI's undefined behavior, a hang or wrong data.
inline bool dist_check() {
    static const bool check = env_flag("LAZYTENSOR_DIST_CHECK", true);
    return check;
}

inline std::string group_name(int group) { return group == 0 ? "world" : concat("#", group); }

/// Says to the other ranks of `groups` that this rank's realize failed before its collectives
/// (`message`), so that they throw too instead of waiting; the caller then throws its own error.
inline void tell_failure(const std::vector<int>& groups, const std::string& message) {
    if (!dist_check()) return;
    for (int g : groups) communicator(g)->agree(concat("failed: ", message.substr(0, 400)), true);
}

/// Reorders `items` (a valid order) so that every collective starts as early as the graph
/// allows: for the collective that needs the fewest items not yet placed, those items (in their
/// order) and then the collective; again until none is left; then the rest in their order.
/// `node_of(i)` is node i of the graph order. Leaves the order alone where an item's
/// dependencies are not all known (an in-place write orders by memory, not by edges).
template <class Item, class IsCollective, class NodeOf>
void start_collectives_early(std::vector<Item>& items, const IsCollective& is_collective, const NodeOf& node_of) {
    const std::size_t n = items.size();
    std::unordered_map<int, std::size_t> made_by;
    for (std::size_t i = 0; i < n; ++i) {
        if (node_of(items[i].root)->kind == NodeKind::Assign) return;
        made_by[items[i].root] = i;
        for (int f : items[i].fused_away()) made_by[f] = i;
    }
    std::vector<std::vector<std::size_t>> needs(n);
    for (std::size_t i = 0; i < n; ++i) {
        std::vector<int> reads = items[i].inputs;
        if (const Aliasing* a = items[i].visit([](const auto& k) { return k.aliasing(); })) reads.push_back(a->base);
        for (int in : reads) {
            auto it = made_by.find(in);
            if (it == made_by.end()) {
                if (!node_of(in)->realized()) return;  // made where the edges do not say
                continue;
            }
            if (it->second == i) continue;  // (a fused product's epilogue reads the product as a parameter)
            if (it->second > i) return;
            needs[i].push_back(it->second);
        }
    }
    std::vector<char> placed(n, 0);
    std::vector<std::size_t> order;
    order.reserve(n);
    // The items not yet placed that item i needs, i included, in their order.
    auto closure = [&](std::size_t i) {
        std::vector<char> in(n, 0);
        std::vector<std::size_t> stack{i};
        while (!stack.empty()) {
            const std::size_t k = stack.back();
            stack.pop_back();
            if (in[k] || placed[k]) continue;
            in[k] = 1;
            for (std::size_t d : needs[k]) stack.push_back(d);
        }
        std::vector<std::size_t> out;
        for (std::size_t k = 0; k < n; ++k)
            if (in[k]) out.push_back(k);
        return out;
    };
    for (;;) {
        std::vector<std::size_t> best;
        bool any = false;
        for (std::size_t i = 0; i < n; ++i) {
            if (placed[i] || !is_collective(items[i])) continue;
            std::vector<std::size_t> c = closure(i);
            if (!any || c.size() < best.size()) best = std::move(c);
            any = true;
        }
        if (!any) break;
        for (std::size_t k : best) {
            placed[k] = 1;
            order.push_back(k);
        }
    }
    for (std::size_t k = 0; k < n; ++k)
        if (!placed[k]) order.push_back(k);
    std::vector<Item> reordered;
    reordered.reserve(n);
    for (std::size_t k : order) reordered.push_back(std::move(items[k]));
    items = std::move(reordered);
}

/// The agreement of every group the plan's collectives use: throws DistributedError, on every
/// rank, where the ranks differ or one of them failed before its collectives.
template <class Item>
void agree_on_collectives(const std::vector<Item>& items) {
    if (!dist_check()) return;
    std::vector<int> groups;
    std::unordered_map<int, std::string> records;
    for (const Item& p : items) {
        const CollectiveItem* c = std::get_if<CollectiveItem>(&p.work);
        if (!c) continue;
        std::string& record = records[c->call.group];
        if (record.empty()) groups.push_back(c->call.group);
        record += (record.empty() ? "" : "; ") + ir::agreement_record(c->call);
    }
    for (int g : groups) {
        const std::shared_ptr<Communicator> comm = communicator(g);
        const Agreement a = comm->agree(records[g], false);
        if (a.agreed) continue;
        std::string failed, all;
        for (std::size_t r = 0; r < a.records.size(); ++r) {
            const std::string& rec = a.records[r];
            if (rec.rfind("failed: ", 0) == 0 && failed.empty())
                failed = concat("rank ", r, "'s realize failed before its collectives started: ", rec.substr(8));
            all += concat(r ? "; " : "", "rank ", r, ": ", rec.empty() ? std::string("no collective") : rec);
        }
        if (!failed.empty())
            fail<DistributedError>("lt::dist: ", failed, " (group ", group_name(g), ", rank ", comm->rank(), " of ",
                                   comm->size(), " here); no data has moved");
        fail<DistributedError>("lt::dist: the ranks realize different collectives (group ", group_name(g), ", ",
                               comm->size(), " ranks): ", all,
                               "; every rank must realize the same collectives, in the same order and in the same "
                               "realize calls (docs/distributed.md); no data has moved");
    }
}

/// Collectives in flight, in the order their items ran: finished before what reads them, and
/// issued in that order (every rank must issue a group's collectives in one order).
class InFlight {
public:
    std::vector<Deferred>& list() { return list_; }
    /// Finishes the ones that complete `node`'s result (issuing the ones before them first).
    void finish(int node) {
        for (std::size_t i = 0; i < list_.size(); ++i) {
            if (list_[i].node != node) continue;
            for (std::size_t k = 0; k < i; ++k) issue(list_[k]);
            list_[i].finish();
            list_.erase(list_.begin() + static_cast<std::ptrdiff_t>(i));
            --i;
        }
    }
    /// Lets the transport progress; finishes the ones that are done. Stops at one that cannot be
    /// issued yet: the ones after it wait for it.
    void progress() {
        for (std::size_t i = 0; i < list_.size();) {
            Deferred& d = list_[i];
            if (d.test()) {
                d.finish();
                list_.erase(list_.begin() + static_cast<std::ptrdiff_t>(i));
                continue;
            }
            if (d.issued && !d.issued()) return;
            ++i;
        }
    }
    void finish_all() {
        for (Deferred& d : list_) d.finish();  // (in order: each issues itself first)
        list_.clear();
    }

private:
    static void issue(Deferred& d) {
        if (d.issue && !d.issued()) d.issue();
    }

    std::vector<Deferred> list_;
};

}  // namespace lazytensor::detail
