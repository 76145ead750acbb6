// CSV writers for simulation results (columns and units:
// docs/formats/outputs.md). Numbers are written in the shortest form that
// reads back to the same double; an empty field means "does not apply" (NaN).
// Text columns (name, request, instances, reason) are quoted as RFC 4180 says
// when they need it (CsvField); in practice only `reason` and names taken
// from JSON-lines traces do.
//
// Thread-safety: reentrant.
#ifndef MIGSCHED_SIM_SIM_WRITERS_H_
#define MIGSCHED_SIM_SIM_WRITERS_H_

#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "sim/sim_result.h"

namespace migsched {

// One CSV field, RFC 4180: returned as is unless it contains a comma, a
// double quote, CR or LF; then enclosed in double quotes with every double
// quote doubled.
std::string CsvField(std::string_view text);

// Header + one row per JobRecord:
// id,name,request,outcome,arrival_s,placed_s,start_s,wait_s,end_s,jct_s,instances,reason,migrations,
// duration_s,slowdown,bounded_slowdown,time_limit_s
// kUnavailable if the stream fails (the same for the writers below).
Status WriteJobsCsv(const SimResult& result, std::ostream& out);

// The same rows for several runs of the same jobs (compare: one run per policy), each row led by
// the run's label: header `policy,id,name,...` as above, then every run's rows in the order given.
// A job's id is the same in every run (its place in the workload), so rows of one job can be
// paired across policies.
Status WriteJobsCsv(const std::vector<std::pair<std::string, const SimResult*>>& runs,
                    std::ostream& out);

// Header + one row per TimelineSample:
// time_s,queue_length,running_jobs,utilization,frag_rate,stranded
Status WriteTimelineCsv(const SimResult& result, std::ostream& out);

// Header + one row per FillPoint:
// target_share,requested_share,allocation,acceptance,frag_rate,arrived,placed
Status WriteFillCurveCsv(const SimResult& result, std::ostream& out);

}  // namespace migsched

#endif  // MIGSCHED_SIM_SIM_WRITERS_H_
