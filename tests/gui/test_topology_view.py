"""The Hardware step's topology view on a recorded H200 capture and on a described 2 x 8 NVLink cluster."""

import json
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue  # noqa: E402
from wizard.core.hardware.cluster import Cluster, GpuLink, LinkKind, ClusterNode, parse_cluster_spec  # noqa: E402
from wizard.core.hardware.topology import nvml_to_discovery  # noqa: E402
from wizard.gui.widgets.topology_view import TopologyView  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"


def show(qtbot, cluster) -> TopologyView:
    view = TopologyView(cluster)
    qtbot.addWidget(view)
    view.resize(1400, 500)
    view.show()
    qtbot.waitExposed(view)
    return view


def test_recorded_h200_shows_its_memory_total_and_free(qtbot):
    raw = json.loads((DATA / "h200-idle.raw-nvml.json").read_text())
    cluster = nvml_to_discovery(raw, None, load_gpu_catalogue()).cluster
    view = show(qtbot, cluster)
    (tile,) = view.tiles.values()
    assert tile.text() == "GPU 0: H200-141GB, 140.4 GiB, 139.8 GiB free"
    assert view.arcs == [] and view.islands == []
    assert view.summary.text().startswith("1 GPU(s) on 1 node(s), from nvml")


def test_two_nvlink_nodes_draw_two_all_to_all_islands(qtbot):
    cluster = parse_cluster_spec("2x8xH100-80GB nvlink", load_gpu_catalogue())
    view = show(qtbot, cluster)
    assert len(view.tiles) == 16 and view.rows == ["node0", "node1"]
    assert [i.gpus for i in view.islands] == [list(range(8))] * 2
    assert view.islands[0].label == "NVLink island: GPUs 0–7, all-to-all NV18"
    assert view.arcs == []  # the band stands for the 28 links of each node
    assert "memory unknown" not in view.tiles[("node1", 7)].text()


def test_pcie_links_are_arcs_drawn_by_kind(qtbot):
    links = [GpuLink(a=0, b=1, kind=LinkKind.NV, nvlinks=4), GpuLink(a=0, b=2, kind=LinkKind.PIX),
             GpuLink(a=1, b=2, kind=LinkKind.SYS), GpuLink(a=0, b=3, kind=LinkKind.SYS), GpuLink(a=1, b=3, kind=LinkKind.PHB),
             GpuLink(a=2, b=3, kind=LinkKind.NV, nvlinks=4)]
    from wizard.core.hardware.cluster import GPU

    node = ClusterNode(name="box", gpu_count=4, gpus=[GPU(index=i, name="RTX A6000") for i in range(4)], links=links)
    view = show(qtbot, Cluster(source="nvml", nodes=[node]))
    kinds = sorted((a.link.a, a.link.b, a.kind.value, a.pen().widthF(), a.pen().style().name) for a in view.arcs)
    assert kinds == [(0, 2, "PIX", 2.0, "SolidLine"), (0, 3, "SYS", 1.0, "DashLine"), (1, 2, "SYS", 1.0, "DashLine"),
                     (1, 3, "PHB", 1.0, "DashLine")]
    assert [i.gpus for i in view.islands] == [[0, 1], [2, 3]]  # the NVLinked pairs are islands
    assert "NVLink island: GPUs 0–1, all-to-all NV4" in view.describe() and "2 SYS link(s)" in view.describe()


def test_many_identical_nodes_are_one_row_and_nothing_is_a_normal_state(qtbot):
    view = show(qtbot, parse_cluster_spec("128x8xH200-141GB", load_gpu_catalogue()))
    assert view.rows == ["node0 – node127  ×128"] and len(view.tiles) == 8
    view.set_cluster(None)
    assert view.tiles == {} and view.summary.text() == "No GPUs detected yet"


def test_a_machine_without_gpus_is_a_row_saying_so_not_its_name_across_the_hint(qtbot):
    # Detect this machine without a GPU: the node's name was drawn over the empty view's hint ("drawvmhere")
    view = show(qtbot, Cluster(nodes=[ClusterNode(name="vm")], source="nvml"))
    texts = [i.text() for i in view.scene.items() if hasattr(i, "text")]
    assert "vm" in texts and "no GPU on this node" in texts
    assert not view.empty_hint.shown()
