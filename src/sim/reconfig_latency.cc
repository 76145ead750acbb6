#include "sim/reconfig_latency.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/text.h"

namespace migsched {
namespace {

// A finite number written in full (strtod over the whole text); false otherwise.
bool ReadNumber(std::string_view text, double* out) {
  const std::string s(text);
  if (s.empty() || std::isspace(static_cast<unsigned char>(s.front()))) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (*end != '\0' || errno == ERANGE || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

std::string Trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

// The measured milliseconds of `path`: a JSON list of numbers, or one number per line.
StatusOr<std::vector<double>> ReadSample(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError(fmt::format("{}: cannot open the file", path));
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text(WithoutUtf8Bom(buf.str()));  // as Excel writes
  std::vector<double> out;
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') {
    nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_array()) {
      return InvalidArgumentError(fmt::format("{}: not a valid JSON list of numbers", path));
    }
    for (size_t i = 0; i < j.size(); ++i) {
      const auto& v = j[i];
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
        return InvalidArgumentError(fmt::format(
            "{}: element {} is {}, not a finite number of milliseconds >= 0", path, i, v.dump()));
      }
      out.push_back(v.get<double>());
    }
  } else {
    std::istringstream lines(text);
    std::string line;
    for (int n = 1; std::getline(lines, line); ++n) {
      const std::string t = Trim(line);
      if (t.empty() || t[0] == '#') continue;
      double v = 0;
      if (!ReadNumber(t, &v) || v < 0) {
        return InvalidArgumentError(
            fmt::format("{}:{}: '{}' is not a finite number of milliseconds >= 0", path, n, t));
      }
      out.push_back(v);
    }
  }
  if (out.empty()) {
    return InvalidArgumentError(fmt::format("{}: no measurements (empty sample)", path));
  }
  return out;
}

}  // namespace

LatencyDistribution LatencyDistribution::Fixed(double ms) {
  LatencyDistribution d;
  d.kind = Kind::kFixed;
  d.fixed_ms = ms;
  return d;
}

LatencyDistribution LatencyDistribution::Lognormal(double median_ms, double sigma) {
  LatencyDistribution d;
  d.kind = Kind::kLognormal;
  d.median_ms = median_ms;
  d.sigma = sigma;
  return d;
}

LatencyDistribution FieldCreateLatency() { return LatencyDistribution::Lognormal(250, 1.0); }
LatencyDistribution FieldDestroyLatency() { return LatencyDistribution::Lognormal(1000, 0.7); }

Status LatencyDistribution::Validate() const {
  switch (kind) {
    case Kind::kFixed:
      if (!std::isfinite(fixed_ms) || fixed_ms < 0 || fixed_ms > kMaxLatencyMs) {
        return InvalidArgumentError(fmt::format(
            "fixed: milliseconds must be a number from 0 to {}, got {}", kMaxLatencyMs, fixed_ms));
      }
      return Status();
    case Kind::kLognormal:
      if (!std::isfinite(median_ms) || median_ms <= 0 || median_ms > kMaxLatencyMs) {
        return InvalidArgumentError(fmt::format(
            "lognormal: the median must be a number of milliseconds > 0 and at most {}, got {}",
            kMaxLatencyMs, median_ms));
      }
      if (!std::isfinite(sigma) || sigma < 0 || sigma > kMaxLognormalSigma) {
        return InvalidArgumentError(fmt::format(
            "lognormal: sigma must be a number from 0 to {} (e^{} = {:.0f} times the median "
            "per standard deviation; measured MIG operations have 0.7-1), got {}",
            kMaxLognormalSigma, kMaxLognormalSigma, std::exp(kMaxLognormalSigma), sigma));
      }
      return Status();
    case Kind::kEmpirical:
      if (samples_ms.empty()) return InvalidArgumentError("empirical: the sample is empty");
      for (double v : samples_ms) {
        if (!std::isfinite(v) || v < 0 || v > kMaxLatencyMs) {
          return InvalidArgumentError(
              fmt::format("empirical: every measurement must be a number from 0 to {} ms, got {}",
                          kMaxLatencyMs, v));
        }
      }
      if (!std::is_sorted(samples_ms.begin(), samples_ms.end())) {
        return InvalidArgumentError("empirical: the sample must be sorted ascending");
      }
      return Status();
  }
  return InternalError("unknown latency distribution kind");
}

double LatencyDistribution::DrawMs(Rng& rng) const {
  switch (kind) {
    case Kind::kFixed:
      return fixed_ms;
    case Kind::kLognormal:
      return median_ms * std::exp(sigma * rng.StandardNormal());
    case Kind::kEmpirical: {
      const size_t n = samples_ms.size();
      const size_t i =
          std::min(n - 1, static_cast<size_t>(rng.Uniform01() * static_cast<double>(n)));
      return samples_ms[i];
    }
  }
  return 0;
}

double LatencyDistribution::MeanMs() const {
  switch (kind) {
    case Kind::kFixed:
      return fixed_ms;
    case Kind::kLognormal:
      return median_ms * std::exp(sigma * sigma / 2);
    case Kind::kEmpirical: {
      double sum = 0;
      for (double v : samples_ms) sum += v;
      return samples_ms.empty() ? 0 : sum / static_cast<double>(samples_ms.size());
    }
  }
  return 0;
}

std::string LatencyDistribution::ToString() const {
  switch (kind) {
    case Kind::kFixed:
      return fmt::format("fixed:{}", fixed_ms);
    case Kind::kLognormal:
      return fmt::format("lognormal:{},{}", median_ms, sigma);
    case Kind::kEmpirical:
      return fmt::format("empirical:{}", file);
  }
  return "";
}

bool LatencyDistribution::operator==(const LatencyDistribution& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::kFixed:
      return fixed_ms == o.fixed_ms;
    case Kind::kLognormal:
      return median_ms == o.median_ms && sigma == o.sigma;
    case Kind::kEmpirical:
      return samples_ms == o.samples_ms;
  }
  return false;
}

StatusOr<LatencyDistribution> ParseLatencySpec(std::string_view spec) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError(fmt::format("{}, got '{}'", why, spec));
  };
  const auto colon = spec.find(':');
  const std::string_view kind = spec.substr(0, colon);
  const std::string_view args = colon == std::string_view::npos ? "" : spec.substr(colon + 1);
  LatencyDistribution d;
  if (colon != std::string_view::npos && kind == "fixed") {
    double ms = 0;
    if (!ReadNumber(args, &ms) || ms < 0) {
      return bad("fixed:MS needs MS, a finite number of milliseconds >= 0");
    }
    d = LatencyDistribution::Fixed(ms);
  } else if (colon != std::string_view::npos && kind == "lognormal") {
    const auto comma = args.find(',');
    double median = 0, sigma = 0;
    if (comma == std::string_view::npos || !ReadNumber(args.substr(0, comma), &median) ||
        !ReadNumber(args.substr(comma + 1), &sigma)) {
      return bad("lognormal:MEDIAN_MS,SIGMA needs two numbers, e.g. lognormal:250,1");
    }
    if (median <= 0) return bad("lognormal:MEDIAN_MS,SIGMA needs MEDIAN_MS > 0");
    if (sigma < 0) return bad("lognormal:MEDIAN_MS,SIGMA needs SIGMA >= 0");
    d = LatencyDistribution::Lognormal(median, sigma);
    if (Status v = d.Validate(); !v.ok()) {
      return InvalidArgumentError(fmt::format("{} (in '{}')", v.message(), spec));
    }
  } else if (colon != std::string_view::npos && kind == "empirical") {
    if (args.empty()) return bad("empirical:FILE needs a file name");
    d.kind = LatencyDistribution::Kind::kEmpirical;
    d.file = std::string(args);
    StatusOr<std::vector<double>> sample = ReadSample(d.file);
    if (!sample.ok()) return sample.status().WithPrefix("empirical");
    d.samples_ms = std::move(*sample);
    std::sort(d.samples_ms.begin(), d.samples_ms.end());
  } else {
    return bad("must be fixed:MS, lognormal:MEDIAN_MS,SIGMA, empirical:FILE or field");
  }
  return d;
}

Status ReconfigLatency::Validate() const {
  RETURN_IF_ERROR(create.Validate().WithPrefix("create latency"));
  return destroy.Validate().WithPrefix("destroy latency");
}

std::string ReconfigLatency::ToString() const {
  if (create == destroy) return create.ToString();
  return fmt::format("create {}, destroy {}", create.ToString(), destroy.ToString());
}

std::vector<std::string> ReconfigLatency::ToSpecs() const {
  if (create == destroy) return {create.ToString()};
  return {"create=" + create.ToString(), "destroy=" + destroy.ToString()};
}

StatusOr<ReconfigLatency> ParseReconfigLatency(const std::vector<std::string>& values) {
  if (values.empty()) return InvalidArgumentError("no SPEC given");
  ReconfigLatency out;
  // Per kind: set by a bare SPEC, set by a prefixed one.
  bool bare[2] = {false, false}, prefixed[2] = {false, false};
  for (const std::string& v : values) {
    std::string_view spec = v;
    int only = -1;  // 0: create, 1: destroy, -1: both
    if (spec.rfind("create=", 0) == 0) {
      only = 0;
      spec.remove_prefix(7);
    } else if (spec.rfind("destroy=", 0) == 0) {
      only = 1;
      spec.remove_prefix(8);
    }
    LatencyDistribution d[2];
    if (spec == "field") {
      d[0] = FieldCreateLatency();
      d[1] = FieldDestroyLatency();
    } else {
      ASSIGN_OR_RETURN(d[0], ParseLatencySpec(spec));
      d[1] = d[0];
    }
    for (int k = 0; k < 2; ++k) {
      if (only >= 0 && only != k) continue;
      bool& seen = only >= 0 ? prefixed[k] : bare[k];
      if (seen) {
        return InvalidArgumentError(
            fmt::format("the {} latency is given twice ('{}')", k == 0 ? "create" : "destroy", v));
      }
      seen = true;
      if (only >= 0 || !prefixed[k]) (k == 0 ? out.create : out.destroy) = d[k];
    }
  }
  RETURN_IF_ERROR(out.Validate());
  return out;
}

}  // namespace migsched
