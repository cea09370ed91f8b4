"""The slot pool (decoder_open/prefill/step): rows at their own columns match the full forward,
whatever other slots run in the same step."""

import unittest

import torch

import helpers
from t2t_worker import slots
from t2t_worker.errors import BadRequest

SEED = 77


class SlotPoolTest(unittest.TestCase):
    def setUp(self):
        self.g = torch.Generator().manual_seed(SEED)
        self.m = helpers.tiny_model(SEED)
        self.m.eval()

    def greedy(self, pool, slot, logits):
        return int(torch.argmax(logits).item())

    def test_rows_match_full_forward_as_others_join_and_leave(self):
        pool = slots.SlotPool(self.m, 4, 32)
        prompts = [helpers.rand_tokens(self.g, n) for n in (5, 2, 9)]
        seqs = {}
        with torch.inference_mode():
            # slot 0 starts alone; slot 2 joins at step 2; slot 1 joins at step 4; slot 0 leaves
            # after step 5.
            nxt = {0: self.greedy(pool, 0, pool.prefill([0], [prompts[0]])[0])}
            seqs[0] = list(prompts[0])
            for step in range(8):
                if step == 2:
                    nxt[2] = self.greedy(pool, 2, pool.prefill([2], [prompts[1]])[0])
                    seqs[2] = list(prompts[1])
                if step == 4:
                    nxt[1] = self.greedy(pool, 1, pool.prefill([1], [prompts[2]])[0])
                    seqs[1] = list(prompts[2])
                if step == 6:
                    del nxt[0]
                active = sorted(nxt)
                out = pool.step(active, [nxt[k] for k in active])
                for i, k in enumerate(active):
                    seqs[k].append(nxt[k])
                    want = helpers.full_logits(self.m, seqs[k])[-1]
                    torch.testing.assert_close(out[i], want, rtol=1e-4, atol=1e-4)
                    nxt[k] = int(torch.argmax(out[i]).item())

    def test_free_slot_reuse_and_bad_requests(self):
        pool = slots.SlotPool(self.m, 2, 8)
        with torch.inference_mode():
            pool.prefill([0], [[1, 2, 3]])
            pool.step([0], [4])
            # new sequences replace the old one; a batch of unequal prompts is padded, then each
            # row is stored unpadded
            logits = pool.prefill([1, 0], [[5, 6, 9, 2], [7]])
            torch.testing.assert_close(logits[1], helpers.full_logits(self.m, [7])[-1], rtol=1e-4, atol=1e-4)
            torch.testing.assert_close(logits[0], helpers.full_logits(self.m, [5, 6, 9, 2])[-1], rtol=1e-4, atol=1e-4)
            out = pool.step([0, 1], [8, 3])
            torch.testing.assert_close(out[0], helpers.full_logits(self.m, [7, 8])[-1], rtol=1e-4, atol=1e-4)
            torch.testing.assert_close(out[1], helpers.full_logits(self.m, [5, 6, 9, 2, 3])[-1], rtol=1e-4, atol=1e-4)
            pool2 = slots.SlotPool(self.m, 2, 8)
            for bad in (lambda: pool2.step([1], [3]),  # free slot
                        lambda: pool.step([0, 0], [3, 3]),
                        lambda: pool.prefill([2], [[1]]),
                        lambda: pool.prefill([0, 0], [[1], [2]]),
                        lambda: pool.prefill([0], [list(range(8))]),
                        lambda: slots.SlotPool(self.m, 0, 8)):
                with self.assertRaises(BadRequest):
                    bad()

    def test_bucket(self):
        self.assertEqual([slots.bucket(n, 8) for n in (1, 2, 3, 5, 8, 9)], [1, 2, 4, 8, 8, 8])


if __name__ == "__main__":
    unittest.main()
