# A synthetic NodeSet2 model for nodeset_bench (docs/Benchmarks.md):
#   nodeset_synth.py COUNT flat|tree FILE
# COUNT Double variables with a value, all below one object (flat) or
# below objects of 100 (tree).
import sys
n=int(sys.argv[1]); flat=sys.argv[2]=='flat'
o=open(sys.argv[3],'w')
o.write('''<?xml version="1.0" encoding="utf-8"?>
<UANodeSet xmlns="http://opcfoundation.org/UA/2011/03/UANodeSet.xsd">
  <NamespaceUris><Uri>urn:uastack:synthetic</Uri></NamespaceUris>
  <Models><Model ModelUri="urn:uastack:synthetic" Version="1.0.0" PublicationDate="2026-12-01T00:00:00Z">
    <RequiredModel ModelUri="http://opcfoundation.org/UA/" Version="1.05.00" PublicationDate="2022-11-01T00:00:00Z"/></Model></Models>
  <Aliases><Alias Alias="Double">i=11</Alias><Alias Alias="Organizes">i=35</Alias><Alias Alias="HasComponent">i=47</Alias><Alias Alias="HasTypeDefinition">i=40</Alias></Aliases>
  <UAObject NodeId="ns=1;i=1" BrowseName="1:Plant"><DisplayName>Plant</DisplayName><References>
    <Reference ReferenceType="Organizes" IsForward="false">i=85</Reference><Reference ReferenceType="HasTypeDefinition">i=61</Reference></References></UAObject>
''')
for i in range(n):
    parent = 1 if flat else 2 + (i//100)*101
    # groups of 100 under folders when not flat
    if not flat and i%100==0:
        fid=2+(i//100)*101
        o.write(f'  <UAObject NodeId="ns=1;i={fid}" BrowseName="1:Area{i//100}"><DisplayName>Area{i//100}</DisplayName><References><Reference ReferenceType="Organizes" IsForward="false">ns=1;i=1</Reference><Reference ReferenceType="HasTypeDefinition">i=61</Reference></References></UAObject>\n')
    nid = 1000000+i
    o.write(f'  <UAVariable NodeId="ns=1;i={nid}" BrowseName="1:Tag{i}" DataType="Double" AccessLevel="3"><DisplayName>Tag{i}</DisplayName><References><Reference ReferenceType="HasComponent" IsForward="false">ns=1;i={parent}</Reference><Reference ReferenceType="HasTypeDefinition">i=63</Reference></References><Value><Double xmlns="http://opcfoundation.org/UA/2008/02/Types.xsd">{i}.5</Double></Value></UAVariable>\n')
o.write('</UANodeSet>\n')
