// A small, strict XML reader for the few request documents S3 accepts (CreateBucketConfiguration,
// Delete, CompleteMultipartUpload). It builds an element tree with namespace prefixes stripped,
// decodes the predefined and numeric character references and CDATA, ignores comments and
// processing instructions, and rejects DOCTYPE (no entity expansion of any kind) and anything
// malformed with MalformedXML.

import { malformedXml } from "./errors.js";

export interface XmlElement {
  name: string;
  children: XmlElement[];
  text: string;
}

const NAME = /^[A-Za-z_][\w.:-]*/;

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#\d+|[a-zA-Z]+);|&/g, (match, ref: string | undefined) => {
    if (ref === undefined) throw malformedXml();
    switch (ref) {
      case "amp":
        return "&";
      case "lt":
        return "<";
      case "gt":
        return ">";
      case "quot":
        return '"';
      case "apos":
        return "'";
    }
    if (ref.startsWith("#")) {
      const code = ref[1] === "x" ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      if (!Number.isFinite(code) || code > 0x10ffff) throw malformedXml();
      return String.fromCodePoint(code);
    }
    throw malformedXml();
  });
}

function localName(qualified: string): string {
  const colon = qualified.indexOf(":");
  return colon < 0 ? qualified : qualified.slice(colon + 1);
}

export function parseXml(source: string): XmlElement {
  let pos = 0;
  const root: XmlElement = { name: "#document", children: [], text: "" };
  const stack: XmlElement[] = [root];
  let seenRoot = false;

  while (pos < source.length) {
    const lt = source.indexOf("<", pos);
    const textEnd = lt < 0 ? source.length : lt;
    if (textEnd > pos) {
      const text = source.slice(pos, textEnd);
      const current = stack[stack.length - 1]!;
      if (current === root) {
        if (text.trim() !== "") throw malformedXml();
      } else {
        current.text += decodeEntities(text);
      }
    }
    if (lt < 0) break;
    pos = lt;
    if (source.startsWith("<?", pos)) {
      const end = source.indexOf("?>", pos);
      if (end < 0) throw malformedXml();
      pos = end + 2;
    } else if (source.startsWith("<!--", pos)) {
      const end = source.indexOf("-->", pos);
      if (end < 0) throw malformedXml();
      pos = end + 3;
    } else if (source.startsWith("<![CDATA[", pos)) {
      const end = source.indexOf("]]>", pos);
      const current = stack[stack.length - 1]!;
      if (end < 0 || current === root) throw malformedXml();
      current.text += source.slice(pos + 9, end);
      pos = end + 3;
    } else if (source.startsWith("<!", pos)) {
      throw malformedXml(); // DOCTYPE and other declarations are not accepted
    } else if (source.startsWith("</", pos)) {
      const end = source.indexOf(">", pos);
      if (end < 0) throw malformedXml();
      const name = source.slice(pos + 2, end).trim();
      const current = stack.pop();
      if (!current || current === root || localName(name) !== current.name) throw malformedXml();
      pos = end + 1;
    } else {
      const m = NAME.exec(source.slice(pos + 1, pos + 1 + 256));
      if (!m) throw malformedXml();
      const element: XmlElement = { name: localName(m[0]), children: [], text: "" };
      // Skip attributes, honouring quotes so a '>' inside a value does not end the tag.
      let i = pos + 1 + m[0].length;
      let quote: string | undefined;
      for (; i < source.length; i++) {
        const c = source[i]!;
        if (quote) {
          if (c === quote) quote = undefined;
        } else if (c === '"' || c === "'") quote = c;
        else if (c === ">") break;
      }
      if (i >= source.length) throw malformedXml();
      const selfClosing = source[i - 1] === "/";
      const parent = stack[stack.length - 1]!;
      if (parent === root) {
        if (seenRoot) throw malformedXml();
        seenRoot = true;
      }
      parent.children.push(element);
      if (!selfClosing) stack.push(element);
      pos = i + 1;
    }
    if (stack.length > 64) throw malformedXml();
  }
  if (stack.length !== 1 || !root.children[0]) throw malformedXml();
  return root.children[0];
}

export function childElements(element: XmlElement, name: string): XmlElement[] {
  return element.children.filter((c) => c.name === name);
}

export function childText(element: XmlElement, name: string): string | undefined {
  return element.children.find((c) => c.name === name)?.text;
}
