// The numbers of a run record (or baseline) as JSON, checked before it is read: nlohmann converts
// 1e308 or 2^64+5 to a byte count of 0, 1.5 to 1 and -5 to 2^64-5, so compare would call an
// impossible peak "better" and a budget of -1 "unlimited". Bad input instead, naming the field.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace oomlab::report {

// Byte counts (budget.bytes, memory.*, memory.per_tag_peak.*, device.total_memory) must be whole
// numbers from 0 to 2^64-1; counts (steps, schema_version, outcome.step, ...) whole numbers in
// their C++ type's range. A missing field is left to run_record_from_json. Throws InputError
// "<file>: memory.peak_allocated is 1e+308, not a byte count (a whole number from 0 to 2^64-1)".
void check_record_numbers(const nlohmann::ordered_json& record, const std::string& file);

}  // namespace oomlab::report
