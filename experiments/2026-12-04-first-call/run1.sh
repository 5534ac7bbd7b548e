# Device call 1: profile auto's first call (cold, warm), and the staged_split shape through a launch record.
set -u
export PYTHONPATH=$PWD
python3 experiments/2026-12-04-first-call/profile_first_call.py --out $OUT/profile --reps 2 > $OUT/profile.log 2>&1
python3 experiments/2026-12-04-first-call/staged_split_record.py --out $OUT/staged_split > $OUT/staged_split.log 2>&1
tail -5 $OUT/profile.log; tail -3 $OUT/staged_split.log | cut -c1-1500
