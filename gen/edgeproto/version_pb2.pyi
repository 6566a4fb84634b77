from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor

class VersionHash(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HASH_d41d8cd98f00b204e9800998ecf8427e: _ClassVar[VersionHash]
    HASH_b35326df0fcd1550b7c0cf6460c4bca2: _ClassVar[VersionHash]
    HASH_52e6980599cd59bbbd0de8d5f4d53d4b: _ClassVar[VersionHash]
    HASH_00bdcfa956ca4ee42be87abcd8fcaf1c: _ClassVar[VersionHash]
    HASH_0d2d9c0b07ad989e96fb3b3a44924316: _ClassVar[VersionHash]
    HASH_2b79f0b6e402045ee5f68d697b9386ae: _ClassVar[VersionHash]
HASH_d41d8cd98f00b204e9800998ecf8427e: VersionHash
HASH_b35326df0fcd1550b7c0cf6460c4bca2: VersionHash
HASH_52e6980599cd59bbbd0de8d5f4d53d4b: VersionHash
HASH_00bdcfa956ca4ee42be87abcd8fcaf1c: VersionHash
HASH_0d2d9c0b07ad989e96fb3b3a44924316: VersionHash
HASH_2b79f0b6e402045ee5f68d697b9386ae: VersionHash
