// SPDX-License-Identifier: MIT
// The view item: a node that is a view of another item's buffer (or of a realized one) at a
// layout the index math can name, as PyTorch's views are. It computes nothing: realize commits
// the node as that buffer at that layout.
#pragma once

#include <cstdint>

#include "item.hpp"

namespace lazytensor::detail {

struct ViewItem : ItemDefaults {
    static constexpr ScheduleItem::Kind kind = ScheduleItem::Kind::View;
    Aliasing view;

    bool computes() const { return false; }
    const Aliasing* aliasing() const { return &view; }
    bool checked_on(const Backend&) const { return false; }
    void describe(ScheduleItem&, Device) const {}
    void run(const ItemRun&) const {}
    const char* reference(const HostRun&) const { return "nothing"; }
    std::string listing() const { return {}; }
};

}  // namespace lazytensor::detail
