"""Scoreboard waits on global loads (model.schedule.scoreboard_deps): a control code's wait on a scoreboard holds
the warp for every load still pending on it, so an FFMA that waits for its fragment's shared load also waits for
the global loads that share that scoreboard (CPU)."""
from perfmodel.measure.sass import control_codes, scoreboard_fields
from perfmodel.model.schedule import load_use_window, program_deps, program_key, scoreboard_deps, simulate

ARGS = dict(warps=1, warps_per_block=1, c_ffma=1.0, smem_latency=30, local_latency=33, fixed_latency=4,
            lds_wavefronts=1.0, sts_wavefronts=1.0, share=1.0)
NONE = 7  # a control code's "no scoreboard"


def _loop(shared_board: bool) -> tuple[dict, list]:
    """A k-tile loop as nvcc lays it out: a global load of the next tile (G), its fragment's shared load (S),
    eight FFMAs reading the fragment, the shared store of the loaded word (T), a barrier. The global load
    releases scoreboard 2; the shared load scoreboard 2 too (shared_board) or scoreboard 0, and the first FFMA
    waits on the shared load's."""
    cls = "GS" + "F" * 8 + "TB"
    n = len(cls)
    deps = [[] for _ in range(n)]
    deps[2] = [1]  # the first FFMA reads the fragment
    deps[10] = [10]  # the store writes what the global load brought
    s_board = 2 if shared_board else 0
    fields = [[NONE, NONE, 0] for _ in range(n)]
    fields[0] = [2, NONE, 0]
    fields[1] = [s_board, NONE, 0]
    fields[2] = [NONE, NONE, 1 << s_board]
    fields[10] = [NONE, NONE, 1 << 2]
    prog = dict(id=f"sb-{shared_board}", cls=cls, wide=[1 if c in "GST" else 0 for c in cls], deps=deps, sb=fields)
    return prog, fields


def test_a_wait_on_a_shared_scoreboard_waits_for_the_global_load():
    prog, fields = _loop(shared_board=True)
    extra = scoreboard_deps(prog, fields)
    assert extra[2] == [2]  # the FFMA also waits for the global load two instructions back
    assert extra[10] == []  # the store's wait was its register flow already
    assert sum(map(len, extra)) == 1
    apart, _ = _loop(shared_board=False)
    assert sum(map(len, scoreboard_deps(apart, apart["sb"]))) == 0  # own scoreboards: nothing beyond the registers


def test_the_replay_with_a_global_latency_waits_it_at_the_math():
    """With the scoreboard shared, a pass takes the global latency before the math, not behind it; without the
    fields (an archive written before programs carried them) the register flow stands."""
    shared, _ = _loop(shared_board=True)
    bare = {k: v for k, v in shared.items() if k != "sb"}
    apart, _ = _loop(shared_board=False)
    lat = 600.0
    t_shared = simulate(shared, global_latency=lat, **ARGS)
    t_bare = simulate(bare, global_latency=lat, **ARGS)
    t_apart = simulate(apart, global_latency=lat, **ARGS)
    assert t_bare == t_apart
    assert t_shared >= lat > t_apart - 8  # the FFMAs wait out the load; apart, only the store does
    assert simulate(shared, **ARGS) == simulate(bare, **ARGS)  # the compute phase (loads delivered) is unchanged
    assert program_key(shared) != program_key(bare) and program_deps(bare) is bare["deps"]


def test_the_load_use_window_closes_at_the_first_wait_on_the_load():
    shared, _ = _loop(shared_board=True)
    bare = {k: v for k, v in shared.items() if k != "sb"}
    assert load_use_window(bare) == 1.0  # all eight FFMAs lie between the load and the store that waits for it
    assert load_use_window(shared) == 0.0  # the first FFMA waits for it


def test_the_fields_are_the_control_words():
    """scoreboard_fields reads the words nvdisasm -hex prints after each instruction, as control_codes does."""
    body = ["        /*0000*/                   LDG.E R2, desc[UR4][R4.64] ;   /* 0x0000000404027981 */",
            "                                                                /* 0x000ea8000c1e1900 */",
            "        /*0010*/                   FFMA R6, R2, R2, R6 ;          /* 0x0000000202067223 */",
            "                                                                /* 0x004fe20000000006 */"]
    codes = control_codes(body)
    assert scoreboard_fields(body) == [[c["write"], c["read"], c["wait"]] for c in codes]
    assert codes[0]["write"] == 2 and codes[1]["wait"] == 1 << 2  # the FFMA waits on the load's scoreboard
