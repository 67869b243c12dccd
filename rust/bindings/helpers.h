/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One-line C wrappers for static inlines and macros that Rust cannot call.
 * No logic lives here.
 */
#ifndef RRXE_HELPERS_H
#define RRXE_HELPERS_H

#include <linux/netdevice.h>
#include <rdma/ib_verbs.h>

struct ib_device *rrxe_ib_alloc_device(size_t size, struct net *net);
struct net_device *rrxe_netdev_notifier_info_to_dev(void *info);
bool rrxe_is_vlan_dev(struct net_device *ndev);
struct net *rrxe_dev_net(struct net_device *ndev);
void rrxe_dev_put(struct net_device *ndev);
void rrxe_addrconf_addr_eui48(u8 *eui, const u8 *addr);
int rrxe_eth_mtu_int_to_enum(int mtu);
unsigned int rrxe_num_possible_cpus(void);
u64 rrxe_bit_ull(unsigned int nr);
struct ib_device *rrxe_ib_device_get_by_netdev(struct net_device *ndev);
unsigned int rrxe_netif_flags(struct net_device *ndev);
const char *rrxe_link_type(void);
void rrxe_get_device(struct ib_device *ibdev);
void rrxe_put_device(struct ib_device *ibdev);

#endif
