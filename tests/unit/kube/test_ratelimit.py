from opsche_daemon.kube.ratelimit import TokenBucket


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_burst_then_qps_like_client_go() -> None:
    clock = Clock()
    bucket = TokenBucket(qps=50, burst=100, clock=clock)
    assert all(bucket.try_acquire() == 0.0 for _ in range(100))
    wait = bucket.try_acquire()
    assert abs(wait - 0.02) < 1e-9  # one token every 1/50 s
    clock.now += 0.02
    assert bucket.try_acquire() == 0.0
    clock.now += 100.0  # a long idle period refills only up to the burst
    assert sum(1 for _ in range(150) if bucket.try_acquire() == 0.0) == 100


def test_zero_qps_means_unlimited() -> None:
    bucket = TokenBucket(qps=0, burst=0)
    assert all(bucket.try_acquire() == 0.0 for _ in range(10_000))
