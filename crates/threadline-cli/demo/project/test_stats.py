"""Tests for stats.py: `python3 test_stats.py`."""

import csv
import os
import unittest

from stats import mean, median, spread

HERE = os.path.dirname(os.path.abspath(__file__))


def readings():
    with open(os.path.join(HERE, "data", "measurements.csv"), newline="") as f:
        return [float(row["celsius"]) for row in csv.DictReader(f)]


class MeanTest(unittest.TestCase):
    def test_mean_of_three(self):
        self.assertEqual(mean([1, 2, 3]), 2)

    def test_mean_of_one(self):
        self.assertEqual(mean([5]), 5)

    def test_mean_of_readings_is_between_min_and_max(self):
        xs = readings()
        self.assertTrue(min(xs) <= mean(xs) <= max(xs))

    def test_mean_of_empty_list_fails(self):
        with self.assertRaises(ValueError):
            mean([])


class MedianTest(unittest.TestCase):
    def test_odd(self):
        self.assertEqual(median([3, 1, 2]), 2)

    def test_even(self):
        self.assertEqual(median([4, 1, 3, 2]), 2.5)


class SpreadTest(unittest.TestCase):
    def test_spread(self):
        self.assertEqual(spread([2, 9, 4]), 7)


if __name__ == "__main__":
    unittest.main()
