// SPDX-License-Identifier: GPL-2.0
/*
 * One-line C wrappers for static inlines and macros that Rust cannot call,
 * plus the one module parameter the Rust side cannot declare (a string).
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/netdevice.h>
#include <linux/if_vlan.h>
#include <net/addrconf.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_addr.h>

#include "helpers.h"

static char link_type[16] = "rrxe";
module_param_string(link_type, link_type, sizeof(link_type), 0444);
MODULE_PARM_DESC(link_type, "rdma link type to register (default rrxe; rxe for drop-in use)");

const char *rrxe_link_type(void) { return link_type; }

struct ib_device *rrxe_ib_alloc_device(size_t size, struct net *net)
{ return _ib_alloc_device(size, net); }

struct net_device *rrxe_netdev_notifier_info_to_dev(void *info)
{ return netdev_notifier_info_to_dev(info); }

bool rrxe_is_vlan_dev(struct net_device *ndev) { return is_vlan_dev(ndev); }

struct net *rrxe_dev_net(struct net_device *ndev) { return dev_net(ndev); }

void rrxe_dev_put(struct net_device *ndev) { dev_put(ndev); }

void rrxe_addrconf_addr_eui48(u8 *eui, const u8 *addr) { addrconf_addr_eui48(eui, addr); }

int rrxe_eth_mtu_int_to_enum(int mtu) { return eth_mtu_int_to_enum(mtu); }

unsigned int rrxe_num_possible_cpus(void) { return num_possible_cpus(); }

u64 rrxe_bit_ull(unsigned int nr) { return BIT_ULL(nr); }

struct ib_device *rrxe_ib_device_get_by_netdev(struct net_device *ndev)
{ return ib_device_get_by_netdev(ndev, RDMA_DRIVER_RXE); }

unsigned int rrxe_netif_flags(struct net_device *ndev) { return READ_ONCE(ndev->flags); }

void rrxe_get_device(struct ib_device *ibdev) { get_device(&ibdev->dev); }

void rrxe_put_device(struct ib_device *ibdev) { put_device(&ibdev->dev); }
