//! The statistics of a comparison: a bootstrap interval of the ratio of
//! two medians and a Mann-Whitney U test.
