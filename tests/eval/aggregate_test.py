#!/usr/bin/env python3
"""Tests of scripts/eval/aggregate.py, the instrument of docs/results.md (run by ctest)."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                                'scripts', 'eval'))
import aggregate  # noqa: E402


def run(policy, jct, waits):
    """A compare --json result of one policy over replicas: mean JCT per replica and the full-GPU
    profile's p95 wait per replica (4g.24gb, as on an A30)."""
    return {'policy': policy, 'replica_results': [
        {'jct_mean_s': j, 'rejected': 0, 'reconfigurations': 10,
         'per_profile': {'4g.24gb': {'wait_p95_s': w}, '1g.6gb': {'wait_p95_s': 1}}}
        for j, w in zip(jct, waits)]}


class FullGpuProfileTest(unittest.TestCase):
    # By the GPU facts (data/gpus): an A30 has 4 compute slices and 4g.24gb takes them all; an
    # RTX PRO 6000 has 4, so its whole is 4g.96gb and 2g.48gb is half of it; an RTX PRO 5000 has 2,
    # so 2g.48gb is its whole; a mixed cluster's figures are keyed by its first model.
    def test_the_whole_gpu_from_the_facts_not_from_the_name(self):
        self.assertEqual(aggregate.full_gpu_profiles('8xA30-24GB'), {'4g.24gb'})
        self.assertIn('4g.96gb', aggregate.full_gpu_profiles('6xRTX-PRO-6000'))
        self.assertNotIn('2g.48gb', aggregate.full_gpu_profiles('6xRTX-PRO-6000'))
        self.assertIn('2g.48gb', aggregate.full_gpu_profiles('2xRTX-PRO-5000'))
        self.assertEqual(aggregate.full_gpu_profiles('2xA100-40GB,2xH100-80GB'), {'7g.40gb'})
        self.assertEqual(aggregate.full_gpu_profiles('4xNO-SUCH-GPU'), set())

    # Regression (full_gpu_column_took_7g_only): the per-profile table's full-GPU column counted
    # 7g profiles only, so a setting on A30 showed '-' and the target row left it out. Two
    # replicas: full waits 50 and 70 s, the baseline 100 and 100 s: ratio of the means 60/100.
    def test_an_a30_setting_has_a_full_gpu_figure(self):
        with tempfile.TemporaryDirectory() as out:
            os.makedirs(os.path.join(out, 'runs'))
            with open(os.path.join(out, 'runs', 'a30.json'), 'w') as f:
                json.dump({'results': [run('first-fit', [200, 200], [100, 100]),
                                       run('full', [150, 150], [50, 70])]}, f)
            sets = [{'name': 'a30', 'cluster': '3xA30-24GB', 'mode': 'queue'}]
            rows = [r for r in aggregate.targets_table(out, sets) if r.startswith('| a30 |')]
            self.assertEqual(len(rows), 1)
            cells = [c.strip() for c in rows[0].split('|')[1:-1]]
            self.assertEqual(cells[1], 'first-fit')
            self.assertTrue(cells[2].startswith('0.60 '), cells[2])


class GapClosedTest(unittest.TestCase):
    # Three replicas, best 100/110/90 (mean 100), reference 90/100/80 (mean 90), full 94/104/84
    # (mean 94): (100 - 94) / (100 - 90) = 60%. Every replica alone closes 6 of 10, so every
    # bootstrap draw does too: the interval is 60% to 60%.
    def test_a_constant_share_has_a_point_interval(self):
        g = aggregate.gap_closed([100, 110, 90], [94, 104, 84], [90, 100, 80])
        self.assertAlmostEqual(g[0], 0.6)
        self.assertAlmostEqual(g[1], 0.6)
        self.assertAlmostEqual(g[2], 0.6)
        self.assertEqual(aggregate.fmt_gap(g), '60% (60% to 60%)')

    # Replicas that disagree (full closes all of one gap of 10, none of the other): the share of
    # the means is 10/20 = 50%, and the interval holds 0% and 100% (a draw of one replica twice).
    def test_disagreeing_replicas_give_a_wide_interval(self):
        g = aggregate.gap_closed([100, 100], [90, 100], [90, 90])
        self.assertAlmostEqual(g[0], 0.5)
        self.assertAlmostEqual(g[1], 0.0)
        self.assertAlmostEqual(g[2], 1.0)

    # Replica 1 has the reference above the best baseline (100 against 110), replica 2 below
    # (100 against 80): the means' gap is 5 (of 100), full closes (100 - 95) / 5 = 100%; a draw
    # of replica 1 twice has no gap, so no interval.
    def test_a_draw_without_a_gap_gives_no_interval(self):
        g = aggregate.gap_closed([100, 100], [100, 90], [110, 80])
        self.assertAlmostEqual(g[0], 1.0)
        self.assertIsNone(g[1])
        self.assertEqual(aggregate.fmt_gap(g), '100% (no interval)')

    # A gap under 1% of the best baseline's value (100 against 99.5) is no room to close.
    def test_no_gap_no_share(self):
        self.assertIsNone(aggregate.gap_closed([100, 100], [99, 99], [99.5, 99.5]))
        self.assertEqual(aggregate.fmt_gap(None), '-')


if __name__ == '__main__':
    unittest.main()
