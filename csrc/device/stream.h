// Streams and events for the device guard (stream.cpp): torch.Stream and
// torch.Event on tpu map onto rt's stream tags and marks.
#pragma once

#include <c10/core/Event.h>
#include <c10/core/Stream.h>

namespace torch_pjrt {

c10::Stream current_stream(c10::DeviceIndex device);
c10::Stream new_stream(c10::DeviceIndex device);
// Makes s current on its device for this thread; returns the previous one.
c10::Stream exchange_stream(c10::Stream s);
bool query_stream(const c10::Stream& s);
void synchronize_stream(const c10::Stream& s);

void event_record(void** event, const c10::Stream& s, c10::DeviceIndex device,
                  c10::EventFlag flag);
void event_block(void* event, const c10::Stream& s);
bool event_query(void* event);
void event_synchronize(void* event);
void event_destroy(void* event) noexcept;
double event_elapsed_ms(void* start, void* end);

}  // namespace torch_pjrt
