#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Prints the <interface> elements of a D-Bus introspection document, sorted by name, one
# canonical line per element, so that documents from different objects can be compared by
# interface. Usage: interfaces-of.py FILE [INTERFACE...]   (no INTERFACE: all of them)
import sys
import xml.etree.ElementTree as ET

root = ET.parse(sys.argv[1] if sys.argv[1] != '-' else sys.stdin).getroot()
wanted = set(sys.argv[2:])
for iface in sorted(root.findall('interface'), key=lambda e: e.get('name')):
    if wanted and iface.get('name') not in wanted:
        continue
    print(ET.tostring(iface, encoding='unicode').strip())
