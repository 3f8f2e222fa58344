// A terminal line chart ("cost history"): values against their index, with a labelled y axis.
#pragma once

#include <string>
#include <vector>

namespace cohort::train {

// Renders `values` into a width x height character grid plus axes; long series are bucketed
// (each column shows the mean of its bucket). Non-finite values are skipped. Empty input gives
// a one-line "(no data)" chart.
std::string ascii_plot(const std::vector<double>& values, const std::string& title, int width = 60,
                       int height = 12);

}  // namespace cohort::train
