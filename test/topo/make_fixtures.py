#!/usr/bin/env python3
"""Write the synthetic hwloc XML fixtures of test/topo/ (the 2x H200 one is a
real dump from the host).  Each is an hwloc 2 topology with packages, NUMA
nodes, host bridges, PCIe switches, GPUs and NICs, NVLink counts in the
GPUCollNVLink info attribute.

    make_fixtures.py OUTDIR
"""
import os
import sys


class Gen:
    def __init__(self, host):
        self.gp = 0
        self.nics = 0
        self.host = host
        self.lines = []

    def idx(self):
        self.gp += 1
        return self.gp

    def emit(self, depth, text):
        self.lines.append("  " * depth + text)


def machine(host, packages, p2p_across=1):
    """packages: list of host-bridge lists; a host bridge is a list of
    switches; a switch is a list of ('gpu'|'nic', busid, extra)."""
    g = Gen(host)
    npk = len(packages)
    full = (1 << npk) - 1
    g.emit(0, '<?xml version="1.0" encoding="UTF-8"?>')
    g.emit(0, '<!DOCTYPE topology SYSTEM "hwloc2.dtd">')
    g.emit(0, '<topology version="2.0">')
    g.emit(1, '<object type="Machine" os_index="0" cpuset="0x%x" complete_cpuset="0x%x" allowed_cpuset="0x%x" '
              'nodeset="0x%x" complete_nodeset="0x%x" allowed_nodeset="0x%x" gp_index="%d">'
           % (full, full, full, full, full, full, g.idx()))
    g.emit(2, '<info name="HostName" value="%s"/>' % host)
    g.emit(2, '<info name="GPUCollP2PAcrossPackages" value="%d"/>' % p2p_across)
    bus = 0
    for p, bridges in enumerate(packages):
        m = 1 << p
        g.emit(2, '<object type="Package" os_index="%d" cpuset="0x%x" complete_cpuset="0x%x" nodeset="0x%x" '
                  'complete_nodeset="0x%x" gp_index="%d">' % (p, m, m, m, m, g.idx()))
        g.emit(3, '<object type="NUMANode" os_index="%d" cpuset="0x%x" complete_cpuset="0x%x" nodeset="0x%x" '
                  'complete_nodeset="0x%x" gp_index="%d" local_memory="1073741824"/>' % (p, m, m, m, m, g.idx()))
        g.emit(3, '<object type="Core" os_index="%d" cpuset="0x%x" complete_cpuset="0x%x" nodeset="0x%x" '
                  'complete_nodeset="0x%x" gp_index="%d">' % (p, m, m, m, m, g.idx()))
        g.emit(4, '<object type="PU" os_index="%d" cpuset="0x%x" complete_cpuset="0x%x" nodeset="0x%x" '
                  'complete_nodeset="0x%x" gp_index="%d"/>' % (p, m, m, m, m, g.idx()))
        g.emit(3, '</object>')
        for switches in bridges:
            first = bus
            nbus = sum(1 + len(s) for s in switches)
            g.emit(3, '<object type="Bridge" gp_index="%d" bridge_type="0-1" depth="0" bridge_pci="0000:[%02x-%02x]">'
                   % (g.idx(), first, first + nbus))
            for s in switches:
                bus += 1
                up = bus
                g.emit(4, '<object type="Bridge" gp_index="%d" bridge_type="1-1" depth="1" bridge_pci="0000:[%02x-%02x]" '
                          'pci_busid="0000:%02x:00.0" pci_type="0604 [10b5:97a0] [0000:0000] 00" pci_link_speed="63.015385">'
                       % (g.idx(), up + 1, up + len(s), first))
                for kind, busid, extra in s:
                    bus += 1
                    if kind == "gpu":
                        g.emit(5, '<object type="PCIDev" gp_index="%d" pci_busid="%s" pci_type="0302 [10de:2330] [10de:16c1] a1" '
                                  'pci_link_speed="63.015385">' % (g.idx(), busid))
                        if extra:
                            g.emit(6, '<info name="GPUCollNVLink" value="%s"/>' % extra)
                        g.emit(5, '</object>')
                    else:
                        g.emit(5, '<object type="PCIDev" gp_index="%d" pci_busid="%s" pci_type="0207 [15b3:1021] [15b3:0041] 00" '
                                  'pci_link_speed="63.015385">' % (g.idx(), busid))
                        g.emit(6, '<info name="GPUCollNICGBps" value="%s"/>' % extra)
                        g.emit(6, '<object type="OSDev" gp_index="%d" name="mlx5_%d" osdev_type="3"/>'
                               % (g.idx(), g.nics))
                        g.nics += 1
                        g.emit(5, '</object>')
                g.emit(4, '</object>')
            g.emit(3, '</object>')
            bus += 1
        g.emit(2, '</object>')
    g.emit(1, '</object>')
    g.emit(0, '</topology>')
    return "\n".join(g.lines) + "\n"


def dgx_h100():
    # 8 GPUs on 4 NVSwitches (18 links each), 4 PCIe switches per socket
    # each holding one GPU and one ConnectX-7 (NDR, 50 GB/s)
    pk = []
    n = 0
    for p in range(2):
        bridges = []
        for s in range(4):
            gb, nb = 0x18 + 0x10 * n, 0x1a + 0x10 * n
            bridges.append([[("gpu", "0000:%02x:00.0" % gb, "nvswitch*18"),
                             ("nic", "0000:%02x:00.0" % nb, "50")]])
            n += 1
        pk.append(bridges)
    return machine("dgx-h100", pk)


def pcie4_2s():
    # 4 PCIe GPUs, two per socket behind one switch each, no P2P across sockets
    return machine("pcie4-2s", [
        [[[("gpu", "0000:03:00.0", ""), ("gpu", "0000:04:00.0", ""), ("nic", "0000:05:00.0", "25")]]],
        [[[("gpu", "0000:83:00.0", ""), ("gpu", "0000:84:00.0", "")]]],
    ], p2p_across=0)


def gpu2nic1_2s():
    # per socket: 2 GPUs and 1 NIC, each GPU on its own root port, NIC on a third
    return machine("gpu2nic1-2s", [
        [[[("gpu", "0000:17:00.0", "")], [("gpu", "0000:31:00.0", "")], [("nic", "0000:4b:00.0", "25")]]],
        [[[("gpu", "0000:98:00.0", "")], [("gpu", "0000:b1:00.0", "")], [("nic", "0000:ca:00.0", "25")]]],
    ])


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__)
    for name, text in (("dgx_h100.xml", dgx_h100()), ("pcie4_2s.xml", pcie4_2s()),
                       ("gpu2nic1_2s.xml", gpu2nic1_2s())):
        open(os.path.join(out, name), "w").write(text)
